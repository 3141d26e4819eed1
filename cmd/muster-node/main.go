// Command muster-node is the agent of one server of a regional federation
// node. It enrols the server at home once with the node key and keeps the
// server key it is given in a 0600 file; then it announces the server's
// services and a hardware report every minute, runs the bandwidth
// self-test when home says it is due (daily), and stops when home revokes
// the server or its node.
//
//	muster-node -home https://home.example.org -key-file /var/lib/muster-node/key \
//	    -node-key mfn_... -service photon=203.0.113.9:22002 \
//	    -service turn=203.0.113.9:3478 -service stun=203.0.113.9:3478
//
// The node key is needed only for the first run: later runs use the key
// file. Every flag can also be set in the environment: MUSTER_NODE_HOME,
// MUSTER_NODE_NODE_KEY, MUSTER_NODE_KEY_FILE, MUSTER_NODE_NAME,
// MUSTER_NODE_SERVICES (name=addr pairs separated by commas) and
// MUSTER_NODE_ANNOUNCE_EVERY.
//
// Exit status: 0 after SIGINT or SIGTERM, 2 for a bad command line, 3 when
// home refuses the server for good (revoked, or its key unknown), 1 for
// any other error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/muster-gg/muster/federation"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// services is a repeatable -service name=addr flag.
type services map[string]string

func (s services) String() string {
	var out []string
	for k, v := range s {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func (s services) Set(v string) error {
	for _, pair := range strings.Split(v, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, addr, ok := strings.Cut(pair, "=")
		if !ok || name == "" || addr == "" {
			return fmt.Errorf("%q is not name=address", pair)
		}
		s[name] = addr
	}
	return nil
}

// run runs the agent until ctx ends and returns the exit code.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("muster-node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	home := fs.String("home", os.Getenv("MUSTER_NODE_HOME"), "home's base URL, such as https://home.example.org")
	nodeKey := fs.String("node-key", os.Getenv("MUSTER_NODE_NODE_KEY"), "the node key home's admin gave you (needed only to enrol)")
	keyFile := fs.String("key-file", os.Getenv("MUSTER_NODE_KEY_FILE"), "where the server key is kept (0600)")
	name := fs.String("name", os.Getenv("MUSTER_NODE_NAME"), "this server's label at home (default the host name)")
	every := fs.Duration("announce-every", 0, "how often to announce (default 1m; keep it below home's silent-after)")
	svc := services{}
	fs.Var(svc, "service", "a service this server runs, name=address (photon, game, turn, stun); repeatable")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "muster-node: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if v := os.Getenv("MUSTER_NODE_SERVICES"); v != "" && len(svc) == 0 {
		if err := svc.Set(v); err != nil {
			fmt.Fprintf(stderr, "muster-node: MUSTER_NODE_SERVICES: %v\n", err)
			return 2
		}
	}
	if v := os.Getenv("MUSTER_NODE_ANNOUNCE_EVERY"); v != "" && *every == 0 {
		d, err := time.ParseDuration(v)
		if err != nil {
			fmt.Fprintf(stderr, "muster-node: MUSTER_NODE_ANNOUNCE_EVERY: %v\n", err)
			return 2
		}
		*every = d
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	node, err := federation.NewNode(federation.NodeConfig{
		HomeURL: *home, NodeKey: *nodeKey, KeyFile: *keyFile, Name: *name,
		Services: svc, AnnounceEvery: *every,
		OnAnnounce: func(a federation.Announcement) {
			if !a.Approved {
				logger.Info("muster-node: announced; the node is not approved yet", "node_id", a.NodeID, "server_id", a.ServerID)
			}
		},
	}, logger)
	if err != nil {
		fmt.Fprintf(stderr, "muster-node: %v\n", err)
		return 2
	}
	logger.Info("muster-node: starting", "home", *home, "services", svc.String())
	err = node.Run(ctx)
	switch {
	case err == nil:
		logger.Info("muster-node: stopped")
		return 0
	case errors.Is(err, federation.ErrRevoked), errors.Is(err, federation.ErrUnauthorized):
		fmt.Fprintf(stderr, "muster-node: home refuses this server (%v); stopping. Ask home's admin; to enrol again, remove %s and run with a new node key.\n", err, *keyFile)
		return 3
	}
	fmt.Fprintf(stderr, "muster-node: %v\n", err)
	return 1
}
