package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

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
	return startKeyed(t, url, cluster, id, withDashboard, nil)
}

// startKeyed is startServer for a server that signs its record with key
// (nil: unsigned).
func startKeyed(t *testing.T, url, cluster, id string, withDashboard bool, key []byte) *server {
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
		Heartbeat: 300 * time.Millisecond, CallTimeout: 250 * time.Millisecond, MaxLoad: 100, Key: key,
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
	var list []fleet.Node
	poll(t, func() (bool, string) {
		code, out, errOut := cli(t, append([]string{"nodes", "--json"}, args...)...)
		list = nil
		if code == 0 {
			if err := json.Unmarshal([]byte(out), &list); err != nil {
				t.Fatalf("nodes --json: %v\n%s", err, out)
			}
			starting := slices.ContainsFunc(list, func(n fleet.Node) bool { return n.State == fleet.StateStarting })
			if len(list) == want && !starting {
				return true, ""
			}
		}
		return false, fmt.Sprintf("nodes: want %d servers; exit %d, %d listed, stderr %q", want, code, len(list), errOut)
	})
	return list
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
	// onRedis runs a command line on the fleet's Redis.
	onRedis := func(t *testing.T, args ...string) (code int, stdout, stderr string) {
		t.Helper()
		return cli(t, append(args, r...)...)
	}
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
	poll(t, func() (bool, string) {
		err := s1.Claim(context.Background(), fleet.KindPlayer, "alice")
		return err == nil, fmt.Sprint(err)
	})

	t.Run("nodes", func(t *testing.T) {
		list := waitNodes(t, 3, r...)
		for i, n := range list {
			if want := "s" + strconv.Itoa(i); n.ID != want || n.Region != "eu-west" || n.State != fleet.StateReady || n.InternalAddress == "" {
				t.Errorf("node %d: %+v", i, n)
			}
		}
		// The table, once every server has published its stats.
		poll(t, func() (bool, string) {
			code, out, errOut := onRedis(t, "nodes")
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if code != 0 || len(lines) != 4 || fields(lines[1])[6] != "duel=2,squad=0" || fields(lines[2])[4] != "3" {
				return false, fmt.Sprintf("nodes table: exit %d\n%s%s", code, out, errOut)
			}
			sameTable(t, out, [][]string{
				{"ID", "REGION", "STATE", "LOAD", "ROOMS", "PLAYERS", "QUEUES", "INTERNAL"},
				{"s0", "eu-west", "ready", "12/100", "-", "-", "duel=2,squad=0", list[0].InternalAddress},
				{"s1", "eu-west", "ready", "0/100", "3", "6", "-", list[1].InternalAddress},
				{"s2", "eu-west", "ready", "0/100", "-", "-", "-", list[2].InternalAddress},
			})
			return true, ""
		})
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
		code, out, errOut := onRedis(t, "locate", "player", "alice")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 2 || strings.Join(fields(lines[1])[:4], " ") != "player/alice s1 eu-west ready" {
			t.Fatalf("locate: exit %d\n%s%s", code, out, errOut)
		}
		code, out, errOut = onRedis(t, "locate", "--json", "player", "alice")
		var got located
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Kind != "player" || got.ID != "alice" ||
			got.Node.ID != "s1" || got.Node.InternalAddress == "" {
			t.Fatalf("locate --json: exit %d, %v, %+v, %s", code, err, got, errOut)
		}
		code, out, errOut = onRedis(t, "locate", "player", "bob")
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
		code, out, errOut = onRedis(t, "drain", "s2", "--wait", waitFor.String())
		if code != 0 || out != "s2: left\n" {
			t.Fatalf("drain s2: exit %d, %q, %q", code, out, errOut)
		}
		waitNodes(t, 2, r...)
		code, out, errOut = onRedis(t, "drain", "s2")
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

// sameTable fails the test unless the table out has want's rows, cell by
// cell.
func sameTable(t *testing.T, out string, want [][]string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if got := fields(lines[i]); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("line %d: %q, want %q", i, got, w)
		}
	}
}

// TestNodesThroughServerShowsPublic: a server's dashboard does not publish
// internal addresses, so the table through --server ends with the public
// address, not an INTERNAL column of "-".
func TestNodesThroughServerShowsPublic(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != dashboard.PathNodes {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(dashboard.Snapshot{Self: "s0", Nodes: []dashboard.Node{
			{ID: "s0", Region: "eu", State: fleet.StateReady, Load: 2, MaxLoad: 10, PublicAddress: "wss://s0.example.com"},
			{ID: "s1", Region: "eu", State: fleet.StateReady, MaxLoad: 10},
		}})
	}))
	defer srv.Close()
	code, out, errOut := cli(t, "nodes", "--server", srv.URL)
	if code != 0 {
		t.Fatalf("nodes --server: exit %d\n%s%s", code, out, errOut)
	}
	sameTable(t, out, [][]string{
		{"ID", "REGION", "STATE", "LOAD", "ROOMS", "PLAYERS", "QUEUES", "PUBLIC"},
		{"s0", "eu", "ready", "2/10", "-", "-", "-", "wss://s0.example.com"},
		{"s1", "eu", "ready", "0/10", "-", "-", "-", "-"},
	})
}

// TestLocateKinds: the usage names the kinds, and a kind that no server
// claims is called unknown, not "not found".
func TestLocateKinds(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	code, _, errOut := cli(t, "locate", "alice", "--redis", mr.Addr())
	if code != 2 || !strings.Contains(errOut, "KIND is player or lobby") {
		t.Errorf("locate with one argument: exit %d, %q", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plyer", "alice"}, `locate: unknown kind plyer: the fleet claims player or lobby (did you mean player?)`},
		{[]string{"Lobby", "ABCDE"}, `locate: unknown kind Lobby: the fleet claims player or lobby (did you mean lobby?)`},
		{[]string{"room", "r1"}, `locate: unknown kind room: the fleet claims player or lobby`},
		{[]string{"player", "alice"}, `player/alice: not found: no live server holds it`},
	} {
		code, out, errOut := cli(t, append(append([]string{"locate"}, tc.args...), "--redis", mr.Addr())...)
		oneFailureLine(t, code, out, errOut, tc.want)
	}
}
