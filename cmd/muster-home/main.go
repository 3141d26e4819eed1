// Command muster-home runs a federation home and administers its register
// of regional nodes.
//
//	muster-home serve [-config home.yml] [-addr 127.0.0.1:8080] [-redis URL] [-cluster NAME] [-admin-token TOKEN]
//	    [-max-rooms-per-server 1000] [-max-report-bytes 16384]
//	muster-home node create -id au-sydney -country AU [-name Sydney] [-region Oceania]
//	muster-home node approve ID
//	muster-home node revoke ID
//	muster-home node list
//	muster-home server revoke ID
//
// The admin commands work on the register directly with -redis, or through
// a running home's admin API with -home URL and -admin-token (for a home
// that keeps its register in memory, in development). Every flag can also
// be set in the environment: MUSTER_HOME_REDIS, MUSTER_HOME_URL,
// MUSTER_HOME_ADMIN_TOKEN, MUSTER_HOME_CLUSTER, MUSTER_HOME_ADDR,
// MUSTER_HOME_CONFIG.
//
// serve reads home's settings (rotation, limits, services, the admin
// token) from muster.federation.home of the -config file and the
// MUSTER__FEDERATION__HOME__ variables, and the proxies it trusts for a
// client's address from muster.server.http.trusted-proxies and
// real-ip-header (MUSTER__SERVER__HTTP__TRUSTED_PROXIES), so that behind a
// TLS proxy each node has its own per-address budget. A flag given wins.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/internal/baseurl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage:
  muster-home serve [-config FILE] [-addr 127.0.0.1:8080] [-redis URL] [-cluster NAME] [-admin-token TOKEN]
  muster-home node create -id ID -country CC [-name NAME] [-region REGION]
  muster-home node approve ID
  muster-home node revoke ID
  muster-home node list
  muster-home server revoke ID
admin commands take -redis URL, or -home URL with -admin-token
`

// errUsage reports a command line that does not parse; usage is printed.
var errUsage = errors.New("bad usage")

// run runs one command and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stderr, usage)
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "muster-home: %v\n%s", err, usage)
		return 2
	}
	fmt.Fprintf(stderr, "muster-home: %v\n", err)
	return 1
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command", errUsage)
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return serve(ctx, rest, stderr)
	case "node", "server":
		if len(rest) == 0 {
			return fmt.Errorf("%w: %s needs a subcommand", errUsage, cmd)
		}
		return adminCommand(ctx, cmd+" "+rest[0], rest[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		return flag.ErrHelp
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
}

// common are the flags every command takes.
type common struct {
	redis, cluster, home, token string
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.redis, "redis", os.Getenv("MUSTER_HOME_REDIS"), "Redis URL of the register (empty: memory)")
	fs.StringVar(&c.cluster, "cluster", envOr("MUSTER_HOME_CLUSTER", "home"), "cluster name namespacing the register in Redis")
	fs.StringVar(&c.home, "home", os.Getenv("MUSTER_HOME_URL"), "base URL of a running home (admin commands without -redis)")
	fs.StringVar(&c.token, "admin-token", os.Getenv("MUSTER_HOME_ADMIN_TOKEN"), "admin API token")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parse parses args, allowing flags after positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

func openBackplane(c common) (backplane.Backplane, error) {
	if c.redis == "" {
		return memory.New(), nil
	}
	return redis.Open(redis.Config{URL: c.redis, Cluster: c.cluster})
}

// The HTTP server's bounds on a client's connection, variables for tests.
var (
	// idleTimeout bounds a keep-alive connection's wait for its next
	// request.
	idleTimeout = 2 * time.Minute
	// readTimeout bounds a request's headers and body together, so that a
	// body announced and never sent does not hold its connection for
	// ever. A node's bandwidth self-test upload (4 MiB by default) must
	// fit in it: a node gives the upload federation.DefaultSelfTestTimeout.
	// home serves no WebSocket or other hijacked connection it could cut.
	readTimeout = federation.DefaultSelfTestTimeout
)

func serve(ctx context.Context, args []string, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	var c common
	c.register(fs)
	addr := fs.String("addr", envOr("MUSTER_HOME_ADDR", "127.0.0.1:8080"), "address to listen on")
	game := fs.String("home-game", "", "home's own game server address, listed in the regions")
	turn := fs.String("home-turn", "", "home's own TURN server, listed in the regions")
	stun := fs.String("home-stun", "", "home's own STUN server, listed in the regions")
	maxRooms := fs.Int("max-rooms-per-server", 0, "open rooms one node server may report (default 1000)")
	maxReport := fs.Int64("max-report-bytes", 0, "bytes of one room report (default 16384)")
	configFile := fs.String("config", os.Getenv("MUSTER_HOME_CONFIG"), "a config file whose muster.federation.home and muster.server.http.trusted-proxies home reads (MUSTER__ variables override it)")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return fmt.Errorf("%w: serve takes no arguments", errUsage)
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	hc, realIP, err := loadHomeConfig(*configFile, os.Environ())
	if err != nil {
		return err
	}
	// A flag given wins over the file and the variables.
	for name, v := range map[string]string{federation.ServiceGame: *game, federation.ServiceTURN: *turn, federation.ServiceSTUN: *stun} {
		if v != "" {
			hc.Services[name] = v
		}
	}
	if c.token != "" {
		hc.AdminToken = c.token
	}
	if *maxRooms != 0 {
		hc.MaxRoomsPerServer = *maxRooms
	}
	if *maxReport != 0 {
		hc.MaxReportBytes = *maxReport
	}
	bp, err := openBackplane(c)
	if err != nil {
		return err
	}
	defer bp.Close()
	home, err := federation.NewHome(hc, bp, logger)
	if err != nil {
		return homeConfigError(err)
	}
	if c.redis == "" {
		logger.Warn("muster-home: the register is in memory and is lost on exit; use -redis in production")
	}
	if hc.AdminToken == "" {
		logger.Warn("muster-home: no admin token: the admin API is off")
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           realIP(home.Handler()),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       readTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("muster-home: serving", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	<-errc
	return err
}

// admin is what the admin commands need: *federation.Home on the register,
// or httpAdmin through a running home.
type admin interface {
	CreateNode(ctx context.Context, spec federation.NodeSpec) (federation.NodeInfo, string, error)
	Approve(ctx context.Context, nodeID string) error
	RevokeNode(ctx context.Context, nodeID string) error
	RevokeServer(ctx context.Context, serverID string) error
	Nodes(ctx context.Context) ([]federation.NodeInfo, error)
}

func adminCommand(ctx context.Context, name string, args []string, stdout, stderr io.Writer) error {
	fs := newFlags(name, stderr)
	var c common
	c.register(fs)
	var spec federation.NodeSpec
	if name == "node create" {
		fs.StringVar(&spec.ID, "id", "", "node id, such as au-sydney")
		fs.StringVar(&spec.Name, "name", "", "node name (default the id)")
		fs.StringVar(&spec.Country, "country", "", "ISO 3166-1 alpha-2 country code, such as AU")
		fs.StringVar(&spec.Region, "region", "", "region label, such as Oceania")
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	wantArgs := 1
	if name == "node create" || name == "node list" {
		wantArgs = 0
	}
	if len(pos) != wantArgs {
		return fmt.Errorf("%w: %s takes %d argument(s)", errUsage, name, wantArgs)
	}
	a, closeFn, err := openAdmin(c)
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	switch name {
	case "node create":
		info, key, err := a.CreateNode(ctx, spec)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "node %s (%s, %s) created; approve it with: muster-home node approve %s\n", info.ID, info.Name, info.Country, info.ID)
		fmt.Fprintf(stdout, "node key, shown only now; give it to the node's operator:\n%s\n", key)
	case "node approve":
		if err := a.Approve(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "node %s approved\n", pos[0])
	case "node revoke":
		if err := a.RevokeNode(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "node %s revoked, with all its servers\n", pos[0])
	case "server revoke":
		if err := a.RevokeServer(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "server %s revoked\n", pos[0])
	case "node list":
		nodes, err := a.Nodes(ctx)
		if err != nil {
			return err
		}
		printNodes(stdout, nodes)
	default:
		return fmt.Errorf("%w: unknown command %q", errUsage, name)
	}
	return nil
}

func openAdmin(c common) (admin, func(), error) {
	switch {
	case c.redis != "" && c.home != "":
		return nil, nil, fmt.Errorf("%w: give -redis or -home, not both", errUsage)
	case c.home != "":
		if c.token == "" {
			return nil, nil, fmt.Errorf("%w: -home needs -admin-token", errUsage)
		}
		u, err := url.Parse(c.home)
		if err != nil || !baseurl.Valid(u) {
			return nil, nil, fmt.Errorf("%w: -home wants home's http(s) base URL without user, query or fragment", errUsage)
		}
		// No redirect is followed: Go's client keeps the Authorization
		// header on one to another port of the same host, or from https to
		// plain http, and the admin API answers in place.
		client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		return &httpAdmin{base: strings.TrimRight(c.home, "/"), token: c.token, client: client}, func() {}, nil
	case c.redis != "":
		bp, err := openBackplane(c)
		if err != nil {
			return nil, nil, err
		}
		home, err := federation.NewHome(federation.HomeConfig{}, bp, slog.New(slog.DiscardHandler))
		if err != nil {
			bp.Close()
			return nil, nil, err
		}
		return home, func() { bp.Close() }, nil
	}
	return nil, nil, fmt.Errorf("%w: give -redis URL (the register) or -home URL (a running home)", errUsage)
}

func printNodes(w io.Writer, nodes []federation.NodeInfo) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tCOUNTRY\tREGION\tSTATE\tSERVERS\tIN ROTATION")
	for _, n := range nodes {
		state := "pending"
		switch {
		case n.Revoked:
			state = "revoked"
		case n.Approved:
			state = "approved"
		}
		fresh := 0
		for _, s := range n.Servers {
			if s.Fresh {
				fresh++
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d fresh of %d\t%v\n", n.ID, n.Country, n.Region, state, fresh, len(n.Servers), n.InRotation)
		for _, s := range n.Servers {
			st := "silent"
			switch {
			case s.Revoked:
				st = "revoked"
			case s.Fresh:
				st = "fresh"
			}
			seen := "never"
			if !s.LastSeen.IsZero() {
				seen = s.LastSeen.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "  %s\t%s\t\t%s\tlast seen %s\t\n", s.ID, s.Name, st, seen)
		}
	}
	tw.Flush()
}
