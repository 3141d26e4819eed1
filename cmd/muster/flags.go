package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/redis"
)

// options are the flags of the fleet commands.
type options struct {
	redis, cluster, server string
	json                   bool
	timeout                time.Duration
	token                  string
	wait                   time.Duration
}

// newFlags returns a flag set for cmd with the flags every command takes.
func newFlags(cmd string, o *options) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run prints the error, and the usage, once
	fs.Usage = func() {}
	fs.BoolVar(&o.json, "json", false, "print JSON")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Second, "bound each call to the store or a server")
	return fs
}

// fleetFlags adds the flags that say where the fleet is.
func fleetFlags(fs *flag.FlagSet, o *options, withServer bool) {
	fs.StringVar(&o.redis, "redis", os.Getenv("MUSTER__SERVER__FLEET__REDIS"), "the fleet's Redis: host:port or redis:// URL")
	fs.StringVar(&o.cluster, "cluster", cmp.Or(os.Getenv("MUSTER__SERVER__FLEET__CLUSTER"), "default"), "the fleet's cluster name")
	if withServer {
		fs.StringVar(&o.server, "server", "", "one server's HTTP address, http://host:port")
	}
}

// parse parses args, flags before or after the positional arguments, and
// checks their number.
func parse(fs *flag.FlagSet, args []string, want int, names string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %s: %v", errUsage, fs.Name(), err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	if len(pos) != want {
		return nil, fmt.Errorf("%w: %s takes %s", errUsage, fs.Name(), names)
	}
	return pos, nil
}

// where checks that the fleet is named one way: by its Redis or, when
// serverOK, by a server. An explicit --server wins over a Redis URL from
// the environment.
func where(fs *flag.FlagSet, o *options, serverOK bool) error {
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	if o.server != "" && o.redis != "" {
		if explicit["redis"] {
			return fmt.Errorf("%w: %s: give --redis or --server, not both", errUsage, fs.Name())
		}
		o.redis = ""
	}
	switch {
	case o.server == "" && o.redis == "" && serverOK:
		return fmt.Errorf("%w: %s: give --redis URL (or MUSTER__SERVER__FLEET__REDIS) or --server URL", errUsage, fs.Name())
	case o.redis == "" && o.server == "":
		return fmt.Errorf("%w: %s: give --redis URL (or MUSTER__SERVER__FLEET__REDIS)", errUsage, fs.Name())
	case o.timeout <= 0:
		return fmt.Errorf("%w: %s: --timeout must be positive", errUsage, fs.Name())
	}
	if o.redis != "" {
		if err := backplane.ValidateName("cluster", o.cluster); err != nil {
			return fmt.Errorf("%w: %s: --cluster: %v", errUsage, fs.Name(), err)
		}
	}
	return nil
}

// openRedis opens the fleet's registry. Open does not dial: an unreachable
// Redis shows at the first call.
func openRedis(o *options) (*redis.Backplane, error) {
	bp, err := redis.Open(redis.Config{URL: o.redis, Cluster: o.cluster, Timeout: o.timeout})
	if err != nil {
		return nil, err
	}
	return bp, nil
}

// oneLine keeps a message on one line.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }), " ")
}

// cell returns s for a table cell: as is when it is printable without
// spaces, quoted otherwise, so a strange value cannot break the table.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	if strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) {
		return strconv.Quote(s)
	}
	return s
}
