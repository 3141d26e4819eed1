package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/fleet"
)

// drainServer is a server that accepts a drain and then answers its
// capacity probe with poll, a handler for every probe after the first.
func drainServer(t *testing.T, poll http.HandlerFunc) *httptest.Server {
	t.Helper()
	var probes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case fleet.PathCapacity:
			if probes.Add(1) == 1 {
				json.NewEncoder(w).Encode(fleet.Capacity{NodeID: "n1", State: fleet.StateReady})
				return
			}
			poll(w, r)
		case fleet.PathDrain:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestDrainWaitRunsOut: drain --wait exits 1 "still draining after D" when
// the server is still there at the end of the wait, whether it answers
// "draining" or its probe does not answer in time: a poll that expires is
// not a server that has exited.
func TestDrainWaitRunsOut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		poll http.HandlerFunc
	}{
		{"draining", func(w http.ResponseWriter, _ *http.Request) {
			json.NewEncoder(w).Encode(fleet.Capacity{NodeID: "n1", State: fleet.StateDraining})
		}},
		{"probe too slow", func(_ http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // busy: answers after the poll gave up
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := drainServer(t, tc.poll)
			code, out, errOut := cli(t, "drain", "n1", "--server", srv.URL, "--wait", "300ms")
			oneFailureLine(t, code, out, errOut, "drain n1: still draining after 300ms")
		})
	}
}

// TestDrainWaitExited: a server whose address refuses connections after
// the drain has exited: drain --wait says it left.
func TestDrainWaitExited(t *testing.T) {
	t.Parallel()
	var srv *httptest.Server
	var closing sync.WaitGroup
	t.Cleanup(closing.Wait)
	srv = drainServer(t, func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(fleet.Capacity{NodeID: "n1", State: fleet.StateDraining})
		closing.Go(srv.Close) // the process exits after this answer
	})
	code, out, errOut := cli(t, "drain", "n1", "--server", srv.URL, "--wait", waitFor.String())
	if code != 0 || out != "n1: left\n" {
		t.Fatalf("drain --wait: exit %d, %q, %q", code, out, errOut)
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
	want := [][]string{
		{"ID", "REGION", "STATE", "LOAD", "ROOMS", "PLAYERS", "QUEUES", "PUBLIC"},
		{"s0", "eu", "ready", "2/10", "-", "-", "-", "wss://s0.example.com"},
		{"s1", "eu", "ready", "0/10", "-", "-", "-", "-"},
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != len(want) {
		t.Fatalf("nodes --server: exit %d\n%s%s", code, out, errOut)
	}
	for i, w := range want {
		if got := fields(lines[i]); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("line %d: %q, want %q", i, got, w)
		}
	}
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

// TestConfigCheckAgreesWithStart: config check refuses what a server
// refuses at start (a fleet without a security key), and prints the
// warnings a server logs.
func TestConfigCheckAgreesWithStart(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(file, []byte("muster:\n  server:\n    fleet:\n      redis: \"redis://:S3cret@redis:6379\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MUSTER__SECURITY__KEY", "")
	os.Unsetenv("MUSTER__SECURITY__KEY")
	code, out, errOut := cli(t, "config", "check", file)
	oneFailureLine(t, code, out, errOut, "muster.security.key / MUSTER__SECURITY__KEY: a fleet")

	t.Setenv("MUSTER__SECURITY__KEY", "0123456789abcdef")
	t.Setenv("MUSTER_SERVER_HTTP_PORT", "9000")
	code, out, errOut = cli(t, "config", "check", file)
	if code != 0 || out != file+": ok\n" ||
		errOut != "muster: warning: config: MUSTER_SERVER_HTTP_PORT is ignored: did you mean MUSTER__SERVER__HTTP__PORT (muster.server.http.port)? A setting's variable has a double underscore between levels\n" {
		t.Errorf("config check: exit %d, %q, %q", code, out, errOut)
	}
}
