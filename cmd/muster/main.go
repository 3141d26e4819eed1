// Command muster inspects and operates a running fleet.
//
//	muster nodes                      the live servers, their state, load and queues
//	muster locate KIND ID             the server that holds a unit (KIND player or lobby)
//	muster drain NODE                 drain a server: it hands its work over and leaves
//	muster config check FILE          load a config.yml as a server would, and report
//
// The fleet is reached through its registry, --redis URL with --cluster
// NAME (default: the environment a server reads, MUSTER__SERVER__FLEET__REDIS
// and MUSTER__SERVER__FLEET__CLUSTER), or through one server's HTTP address,
// --server http://host:port (nodes and drain). Output is a table; --json
// prints JSON for scripts.
//
// drain --wait D waits for the server to leave the fleet and fails with
// "still draining after D" when it has not; a poll that times out is not
// taken for a server that has exited.
//
// Exit codes: 0 success; 1 failure (a unit or server not found, a store or
// server unreachable, a refused drain, a drain still going at the end of
// --wait, a bad configuration file); 2 a command line that does not parse.
// Every failure is one line on stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"syscall"

	goredis "github.com/redis/go-redis/v9"
)

func main() {
	goredis.SetLogger(quietRedis{}) // failures are reported once, by run
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// quietRedis drops go-redis's own log lines (failed dials).
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

const usage = `usage:
  muster nodes              [--redis URL [--cluster NAME] | --server URL] [--json]
  muster locate KIND ID     --redis URL [--cluster NAME] [--json]   (KIND: player or lobby)
  muster drain NODE         [--redis URL [--cluster NAME] | --server URL] [--token T] [--wait DURATION] [--json]
  muster config check FILE  [--json]
common flags: --timeout DURATION (each call; default 5s)
environment: MUSTER__SERVER__FLEET__REDIS, MUSTER__SERVER__FLEET__CLUSTER (--redis, --cluster),
             MUSTER_DRAIN_TOKEN (--token)
exit codes: 0 ok, 1 failure, 2 usage
`

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// errUsage marks a command line that does not parse; usage is printed.
var errUsage = errors.New("usage")

// run runs one command line and returns its exit code. Results go to
// stdout; a failure is one line on stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, stdout, stderr)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return exitOK
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "muster: %v\n%s", err, usage)
		return exitUsage
	}
	fmt.Fprintf(stderr, "muster: %s\n", redact(oneLine(err.Error())))
	return exitFailure
}

// userinfo matches the password of a URL such as redis://user:pw@host.
var userinfo = regexp.MustCompile(`(://[^:/@\s"]*:)[^@\s"]+@`)

// redact hides URL passwords in a message: an error that quotes a
// malformed --redis URL must not print the password into a CI log.
func redact(s string) string { return userinfo.ReplaceAllString(s, "${1}xxxxx@") }

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command", errUsage)
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "nodes":
		return nodes(ctx, rest, stdout, stderr)
	case "locate":
		return locate(ctx, rest, stdout, stderr)
	case "drain":
		return drain(ctx, rest, stdout, stderr)
	case "config":
		if len(rest) == 0 || rest[0] != "check" {
			return fmt.Errorf("%w: config takes the subcommand check", errUsage)
		}
		return configCheck(rest[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		return flag.ErrHelp
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
}
