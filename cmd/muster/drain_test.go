package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/muster-gg/muster/fleet"
)

// drainServer is server n1, which answers a drain with drain, and its
// capacity probe as ready the first time and then with poll (ready every
// time when poll is nil).
func drainServer(t *testing.T, drain, poll http.HandlerFunc) *httptest.Server {
	t.Helper()
	var probes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case fleet.PathCapacity:
			if probes.Add(1) == 1 || poll == nil {
				capacityIs(w, fleet.StateReady)
				return
			}
			poll(w, r)
		case fleet.PathDrain:
			drain(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// capacityIs answers a capacity probe as server n1 in state.
func capacityIs(w http.ResponseWriter, state fleet.State) {
	json.NewEncoder(w).Encode(fleet.Capacity{NodeID: "n1", State: state})
}

// accepted answers a drain: it has started.
func accepted(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) }

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
		{"draining", func(w http.ResponseWriter, _ *http.Request) { capacityIs(w, fleet.StateDraining) }},
		{"probe too slow", func(_ http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // busy: answers after the poll gave up
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := drainServer(t, accepted, tc.poll)
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
	srv = drainServer(t, accepted, func(w http.ResponseWriter, _ *http.Request) {
		capacityIs(w, fleet.StateDraining)
		closing.Go(srv.Close) // the process exits after this answer
	})
	code, out, errOut := cli(t, "drain", "n1", "--server", srv.URL, "--wait", waitFor.String())
	if code != 0 || out != "n1: left\n" {
		t.Fatalf("drain --wait: exit %d, %q, %q", code, out, errOut)
	}
}

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
			srv := drainServer(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				auth = r.Header.Get("Authorization")
				mu.Unlock()
				http.Error(w, "boom", tc.status)
			}, nil)
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
