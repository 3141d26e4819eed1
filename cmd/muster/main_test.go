package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// runMain makes the test binary run main when a test executes it again, so
// that main itself (its exit code, go-redis's silenced logger) is tested.
const runMain = "MUSTER_CLI_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMain) == "1" {
		main()
		return
	}
	goredis.SetLogger(quietRedis{}) // as main does
	goleak.VerifyTestMain(m)
}

// waitFor bounds every wait in these tests; it is a failure deadline, never
// a measurement.
const waitFor = 10 * time.Second

// cli runs one command line and returns its exit code and output.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// oneFailureLine checks the rule for failures: exit 1, nothing on stdout,
// one line on stderr, starting "muster: " and holding each of want.
func oneFailureLine(t *testing.T, code int, stdout, stderr string, want ...string) {
	t.Helper()
	if code != 1 {
		t.Errorf("exit %d, want 1 (stdout %q, stderr %q)", code, stdout, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
	if !strings.HasPrefix(stderr, "muster: ") || !strings.HasSuffix(stderr, "\n") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("stderr %q, want one line starting muster:", stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q lacks %q", stderr, w)
		}
	}
}

// poll calls try until it reports done, every 20 ms, and fails the test
// with try's last word on what is missing when waitFor passes first.
func poll(t *testing.T, try func() (done bool, missing string)) {
	t.Helper()
	for deadline := time.Now().Add(waitFor); ; time.Sleep(20 * time.Millisecond) {
		done, missing := try()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after %v", missing, waitFor)
		}
	}
}

// closedAddr returns a loopback address that nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(testbin.FreePort(t, "127.0.0.1"))
}

// TestUnreachable: a store or server that cannot be reached, or a URL that
// does not parse, is one clear line and exit 1.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	closed := closedAddr(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"redis refused", []string{"nodes", "--redis", closed}, []string{"backplane/redis", "connection refused"}},
		{"redis URL refused", []string{"locate", "player", "a", "--redis", "redis://" + closed + "/0"}, []string{"connection refused"}},
		{"redis bad URL", []string{"nodes", "--redis", "redis://bad host:6379"}, []string{"backplane/redis", "bad host"}},
		{"redis bad URL with a password", []string{"nodes", "--redis", "redis://u:secret-pw@bad host:6379"}, []string{"redis://u:xxxxx@bad host"}},
		{"redis no port", []string{"drain", "s1", "--redis", "localhost"}, []string{"backplane/redis", "localhost"}},
		{"server refused", []string{"nodes", "--server", "http://" + closed}, []string{"connection refused"}},
		{"drain server refused", []string{"drain", "s1", "--server", "http://" + closed}, []string{"connection refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := cli(t, tc.args...)
			oneFailureLine(t, code, out, errOut, tc.want...)
			if strings.Contains(errOut, "secret-pw") {
				t.Errorf("stderr shows the password: %q", errOut)
			}
		})
	}
}

// runMainCmd runs the command itself, main and all, in a new process, and
// returns its exit code and output.
func runMainCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMain+"=1", "MUSTER__SERVER__FLEET__REDIS=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

// TestMainBadURL runs the command itself: a bad Redis address is one line
// on stderr, with nothing from go-redis's own logger, and exit status 1;
// a bad command line is exit status 2.
func TestMainBadURL(t *testing.T) {
	t.Parallel()
	closed := closedAddr(t)
	code, out, errOut := runMainCmd(t, "nodes", "--redis", closed)
	oneFailureLine(t, code, out, errOut, "connection refused")
	if code, _, errOut := runMainCmd(t, "nodes"); code != 2 {
		t.Errorf("usage: exit %d, want 2: %s", code, errOut)
	}
}

func TestUsage(t *testing.T) {
	t.Setenv("MUSTER__SERVER__FLEET__REDIS", "")
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"no command", nil, 2},
		{"unknown command", []string{"frobnicate"}, 2},
		{"help", []string{"help"}, 0},
		{"flag help", []string{"nodes", "-h"}, 0},
		{"nodes nowhere", []string{"nodes"}, 2},
		{"nodes both", []string{"nodes", "--redis", "x:1", "--server", "http://x"}, 2},
		{"nodes argument", []string{"nodes", "s1", "--redis", "x:1"}, 2},
		{"nodes bad flag", []string{"nodes", "--nope"}, 2},
		{"nodes bad cluster", []string{"nodes", "--redis", "x:1", "--cluster", "a:b"}, 2},
		{"nodes bad timeout", []string{"nodes", "--redis", "x:1", "--timeout", "0s"}, 2},
		{"nodes bad server", []string{"nodes", "--server", "ftp://x"}, 2},
		{"locate one argument", []string{"locate", "player", "--redis", "x:1"}, 2},
		{"locate through a server", []string{"locate", "player", "a", "--server", "http://x"}, 2},
		{"locate bad kind", []string{"locate", "pl:ayer", "a", "--redis", "x:1"}, 2},
		{"drain no node", []string{"drain", "--redis", "x:1"}, 2},
		{"drain negative wait", []string{"drain", "s1", "--redis", "x:1", "--wait", "-1s"}, 2},
		{"config no subcommand", []string{"config"}, 2},
		{"config other subcommand", []string{"config", "print", "f"}, 2},
		{"config check no file", []string{"config", "check"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := cli(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s%s", code, tc.code, out, errOut)
			}
			switch tc.code {
			case 0:
				if !strings.HasPrefix(out, "usage:") {
					t.Errorf("help: %q", out)
				}
			case 2:
				if !strings.HasPrefix(errOut, "muster: ") || !strings.Contains(errOut, "\nusage:") {
					t.Errorf("stderr %q", errOut)
				}
			}
		})
	}
}
