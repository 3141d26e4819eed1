package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testbin"
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

// server is one game server of a test fleet: its fleet on Redis and its
// HTTP handler (probes, drain, and the dashboard when asked).
type server struct {
	*fleet.Fleet
	URL string
}

// startServer starts server id in cluster on the Redis at url, with its
// internal address its own HTTP listener. It stops when the test ends.
func startServer(t *testing.T, url, cluster, id string, withDashboard bool) *server {
	t.Helper()
	// A generous socket timeout: on a loaded machine a call can take more
	// than the default 500ms; the fleet's own calls are bounded by its
	// CallTimeout all the same.
	bp, err := redis.Open(redis.Config{URL: url, Cluster: cluster, Timeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(nil)
	fl, err := fleet.New(fleet.Config{
		NodeID: id, Region: "eu-west", InternalAddress: hs.Listener.Addr().String(),
		Heartbeat: 300 * time.Millisecond, CallTimeout: 250 * time.Millisecond, MaxLoad: 100,
	}, bp, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/muster/server/", fl.Handler())
	if withDashboard {
		mux.Handle("/muster/dashboard/", dashboard.Handler(fl))
	}
	hs.Config.Handler = mux
	hs.Start()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { fl.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		hs.Close()
		bp.Close()
	})
	fl.MarkReady()
	return &server{Fleet: fl, URL: hs.URL}
}

// waitNodes polls `muster nodes --json` until it lists want servers, none
// of them still starting (a server publishes "ready" a heartbeat after
// MarkReady).
func waitNodes(t *testing.T, want int, args ...string) []fleet.Node {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		code, out, errOut := cli(t, append([]string{"nodes", "--json"}, args...)...)
		var list []fleet.Node
		if code == 0 {
			if err := json.Unmarshal([]byte(out), &list); err != nil {
				t.Fatalf("nodes --json: %v\n%s", err, out)
			}
			starting := slices.ContainsFunc(list, func(n fleet.Node) bool { return n.State == fleet.StateStarting })
			if len(list) == want && !starting {
				return list
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("nodes: want %d servers after %v; exit %d, %d listed, stderr %q", want, waitFor, code, len(list), errOut)
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}

func TestFleetCommandsMiniredis(t *testing.T) {
	t.Parallel()
	testFleetCommands(t, miniredis.RunT(t).Addr())
}

func TestFleetCommandsRedisServer(t *testing.T) {
	t.Parallel()
	testFleetCommands(t, testbin.StartRedis(t).Addr)
}

// testFleetCommands runs nodes, locate and drain against a fleet of three
// on the Redis at url.
func testFleetCommands(t *testing.T, url string) {
	r := []string{"--redis", url, "--cluster", "cli"}
	s0 := startServer(t, url, "cli", "s0", true)
	s1 := startServer(t, url, "cli", "s1", false)
	startServer(t, url, "cli", "s2", false)
	s0.SetLoad(12)
	s0.SetStat("queue:duel", 2)
	s0.SetStat("queue:squad", 0)
	s1.SetStat("rooms", 3)
	s1.SetStat("players", 6)
	// The fleet bounds a claim by its short CallTimeout, which a loaded
	// machine can overrun: try again until the claim is written.
	for deadline := time.Now().Add(waitFor); ; {
		err := s1.Claim(context.Background(), fleet.KindPlayer, "alice")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}

	t.Run("nodes", func(t *testing.T) {
		list := waitNodes(t, 3, r...)
		for i, n := range list {
			if want := "s" + strconv.Itoa(i); n.ID != want || n.Region != "eu-west" || n.State != fleet.StateReady || n.InternalAddress == "" {
				t.Errorf("node %d: %+v", i, n)
			}
		}
		// The table, once every server has published its stats.
		deadline := time.Now().Add(waitFor)
		for {
			code, out, errOut := cli(t, append([]string{"nodes"}, r...)...)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if code == 0 && len(lines) == 4 && fields(lines[1])[6] == "duel=2,squad=0" && fields(lines[2])[4] == "3" {
				want := [][]string{
					{"ID", "REGION", "STATE", "LOAD", "ROOMS", "PLAYERS", "QUEUES", "INTERNAL"},
					{"s0", "eu-west", "ready", "12/100", "-", "-", "duel=2,squad=0", list[0].InternalAddress},
					{"s1", "eu-west", "ready", "0/100", "3", "6", "-", list[1].InternalAddress},
					{"s2", "eu-west", "ready", "0/100", "-", "-", "-", list[2].InternalAddress},
				}
				for i, w := range want {
					if got := fields(lines[i]); strings.Join(got, " ") != strings.Join(w, " ") {
						t.Errorf("line %d: %q, want %q", i, got, w)
					}
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("nodes table after %v: exit %d\n%s%s", waitFor, code, out, errOut)
			}
			time.Sleep(20 * time.Millisecond) // poll interval
		}
	})

	t.Run("nodes through a server", func(t *testing.T) {
		// s0 serves the dashboard: the fleet as it sees it.
		list := waitNodes(t, 3, "--server", s0.URL)
		if list[0].ID != "s0" || list[0].Load != 12 || list[0].Stat("queue:duel") != 2 || list[0].InternalAddress != "" {
			t.Errorf("s0 through its dashboard: %+v", list[0])
		}
		// s1 does not: its capacity probe, itself only.
		list = waitNodes(t, 1, "--server", s1.URL+"/")
		if list[0].ID != "s1" || list[0].Stat("rooms") != 3 {
			t.Errorf("s1 through its probe: %+v", list[0])
		}
	})

	t.Run("locate", func(t *testing.T) {
		code, out, errOut := cli(t, append([]string{"locate", "player", "alice"}, r...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 2 || strings.Join(fields(lines[1])[:4], " ") != "player/alice s1 eu-west ready" {
			t.Fatalf("locate: exit %d\n%s%s", code, out, errOut)
		}
		code, out, errOut = cli(t, append([]string{"locate", "--json", "player", "alice"}, r...)...)
		var got located
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Kind != "player" || got.ID != "alice" ||
			got.Node.ID != "s1" || got.Node.InternalAddress == "" {
			t.Fatalf("locate --json: exit %d, %v, %+v, %s", code, err, got, errOut)
		}
		code, out, errOut = cli(t, append([]string{"locate", "player", "bob"}, r...)...)
		oneFailureLine(t, code, out, errOut, "player/bob: not found")
	})

	t.Run("drain", func(t *testing.T) {
		// Through a server that is not the one named: refused, nothing drains.
		code, out, errOut := cli(t, "drain", "s1", "--server", s0.URL)
		oneFailureLine(t, code, out, errOut, "is s0")
		if s0.Draining() || s1.Draining() {
			t.Fatal("a server drains after a refused drain")
		}

		// Through the registry: POST at the internal address, wait until gone.
		code, out, errOut = cli(t, append([]string{"drain", "s2", "--wait", waitFor.String()}, r...)...)
		if code != 0 || out != "s2: left\n" {
			t.Fatalf("drain s2: exit %d, %q, %q", code, out, errOut)
		}
		waitNodes(t, 2, r...)
		code, out, errOut = cli(t, append([]string{"drain", "s2"}, r...)...)
		oneFailureLine(t, code, out, errOut, "drain s2: not a live server of cluster cli")

		// Through the server's own address.
		code, out, errOut = cli(t, "drain", "s1", "--server", s1.URL, "--json", "--wait", waitFor.String())
		var got drained
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got != (drained{Node: "s1", State: "left"}) {
			t.Fatalf("drain s1 --server: exit %d, %v, %q, %q", code, err, out, errOut)
		}
		list := waitNodes(t, 1, r...)
		if list[0].ID != "s0" {
			t.Fatalf("left: %+v", list)
		}
		select {
		case <-s1.Done():
		case <-time.After(waitFor):
			t.Fatal("s1 has not left")
		}
	})
}

// fields splits a table line into its cells.
func fields(line string) []string { return strings.Fields(line) }

// TestDrainRefused checks the answers of a server that will not drain.
func TestDrainRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		want   string
	}{
		{"forbidden", http.StatusForbidden, "refused: drain from the server's own machine, or give the drain token (--token)"},
		{"left", http.StatusConflict, "the server has already left the fleet"},
		{"broken", http.StatusInternalServerError, "/muster/server/drain: 500 Internal Server Error: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var auth string
			var mu sync.Mutex
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case fleet.PathCapacity:
					json.NewEncoder(w).Encode(fleet.Capacity{NodeID: "n1", State: fleet.StateReady})
				case fleet.PathDrain:
					mu.Lock()
					auth = r.Header.Get("Authorization")
					mu.Unlock()
					http.Error(w, "boom", tc.status)
				}
			}))
			defer srv.Close()
			code, out, errOut := cli(t, "drain", "n1", "--server", srv.URL, "--token", "tok")
			oneFailureLine(t, code, out, errOut, "drain n1: ", tc.want)
			mu.Lock()
			defer mu.Unlock()
			if auth != "Bearer tok" {
				t.Errorf("Authorization %q", auth)
			}
		})
	}
}

// TestUnreachable: a store or server that cannot be reached, or a URL that
// does not parse, is one clear line and exit 1.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	closed := "127.0.0.1:" + strconv.Itoa(testbin.FreePort(t, "127.0.0.1"))
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
	closed := "127.0.0.1:" + strconv.Itoa(testbin.FreePort(t, "127.0.0.1"))
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

func TestConfigCheck(t *testing.T) {
	t.Setenv("MUSTER__SERVER__HTTP__PORT", "")
	os.Unsetenv("MUSTER__SERVER__HTTP__PORT")
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yml", "muster:\n  server:\n    http:\n      port: 9000\n")
	bad := write("bad.yml", "muster:\n  server:\n    http:\n      port: 0\n")

	code, out, errOut := cli(t, "config", "check", good)
	if code != 0 || out != good+": ok\n" || errOut != "" {
		t.Fatalf("good: exit %d, %q, %q", code, out, errOut)
	}
	code, out, errOut = cli(t, "config", "check", bad)
	oneFailureLine(t, code, out, errOut, "muster.server.http.port", "bad.yml line 4")
	code, out, errOut = cli(t, "config", "check", filepath.Join(dir, "missing.yml"))
	oneFailureLine(t, code, out, errOut, "missing.yml")

	// The environment counts, as it does for a server.
	t.Setenv("MUSTER__SERVER__HTTP__PORT", "abc")
	code, out, errOut = cli(t, "config", "check", good)
	oneFailureLine(t, code, out, errOut, "MUSTER__SERVER__HTTP__PORT")
	os.Unsetenv("MUSTER__SERVER__HTTP__PORT")

	for _, tc := range []struct {
		file string
		code int
		ok   bool
	}{{good, 0, true}, {bad, 1, false}} {
		code, out, _ := cli(t, "config", "check", "--json", tc.file)
		var got checked
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != tc.code || got.OK != tc.ok || got.File != tc.file ||
			(got.Error == "") == !tc.ok {
			t.Errorf("%s --json: exit %d, %+v, %v", tc.file, code, got, err)
		}
	}
}
