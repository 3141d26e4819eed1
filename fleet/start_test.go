package fleet_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
)

// A second server started with a node id in use refuses to run, naming the
// setting, and leaves the first one's record alone.
func TestDuplicateNodeID(t *testing.T) {
	withSeen(t, 2, func(t *testing.T, c *fleettest.Cluster) {
		// Long after the first one started, and out of its phase, as a
		// real one is.
		time.Sleep((fleet.MissedHeartbeats+1)*hb + hb/2)
		bp, err := c.Store.Cluster("default")
		if err != nil {
			t.Fatal(err)
		}
		dup := startFleet(t, fleet.Config{NodeID: "s0", Heartbeat: hb}, bp, nil)
		dup.MarkReady()
		time.Sleep(fleet.MissedHeartbeats * hb)
		synctest.Wait()
		ended, err := dup.run.Ended()
		if !ended {
			t.Fatal("a second server with node id s0 still runs after a ttl")
		}
		if !errors.Is(err, fleet.ErrDuplicateID) ||
			!strings.Contains(err.Error(), "muster.server.fleet.node-id") ||
			!strings.Contains(err.Error(), "MUSTER__SERVER__FLEET__NODE_ID") {
			t.Fatalf("Run with a node id in use = %v", err)
		}
		time.Sleep(hb)
		synctest.Wait()
		if got := ids(c.Servers[1].Fleet); got != "[s0 s1]" {
			t.Fatalf("after the duplicate stopped, s1 sees %s", got)
		}
	})
}

// A server restarted with its id while its previous life's record lives
// starts.
func TestRestartWithSameID(t *testing.T) {
	withSeen(t, 2, func(t *testing.T, c *fleettest.Cluster) {
		c.Servers[0].Kill()
		bp, err := c.Store.Cluster("default")
		if err != nil {
			t.Fatal(err)
		}
		again := startFleet(t, fleet.Config{NodeID: "s0", Heartbeat: hb}, bp, nil)
		time.Sleep(2 * fleet.MissedHeartbeats * hb)
		synctest.Wait()
		if ended, err := again.run.Ended(); ended {
			t.Fatalf("a restarted server stopped: %v", err)
		}
		again.run.End(t)
	})
}

// With the backplane unreachable from the start, the readiness probe says
// "detached", and leaving still ends well.
func TestDetachedAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fleettest.Start(t, 0, nil)
		s := c.Add(fleet.Config{NodeID: "a"})
		s.Backplane.Cut(true)
		time.Sleep(hb)
		synctest.Wait()
		// Cut after Add's first heartbeat may have landed: start afresh.
		s2bp := fleettest.NewFaulty(s.Backplane)
		s2bp.Cut(true)
		f := startFleet(t, fleet.Config{NodeID: "b", Heartbeat: hb}, s2bp, nil)
		f.MarkReady()
		synctest.Wait()
		if code := probe(f.Handler(), "GET", fleet.PathReady, "127.0.0.1:1", ""); code != 503 || !f.Detached() {
			t.Fatalf("ready with the backplane never reached = %d, detached %v", code, f.Detached())
		}
		if err := f.Drain(context.Background()); err != nil {
			t.Fatalf("drain while detached = %v, want nil", err)
		}
		f.run.End(t)
	})
}

// TestFailedHeartbeatRace: what a failed heartbeat notes (that the
// backplane was tried) is read under the fleet's lock, by the readiness
// probe, Increment and Detached, while heartbeats fail: it used to be
// written after the lock was let go, a data race that the race detector
// found in a server taking connections while its Redis stalled.
func TestFailedHeartbeatRace(t *testing.T) {
	bp := fleettest.NewFaulty(memory.New())
	bp.Cut(true)
	f := startFleet(t, fleet.Config{NodeID: "a", Heartbeat: 10 * time.Millisecond}, bp, slog.New(slog.DiscardHandler))
	for bp.Calls("Heartbeat") < 3 {
		f.Detached()
		f.Increment(t.Context(), "k", time.Minute, 1)
	}
	if !f.Detached() {
		t.Error("not detached with every heartbeat failing")
	}
	f.run.End(t)
}

func TestRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startFleet(t, fleet.Config{NodeID: "a"}, memory.New(), nil)
		synctest.Wait()
		if err := f.Run(f.run.Context()); !errors.Is(err, fleet.ErrRunning) {
			t.Fatalf("second Run = %v, want ErrRunning", err)
		}
		f.run.End(t)
		// Run has ended: a drain request is refused, and starts nothing.
		if got := probe(f.Handler(), "POST", fleet.PathDrain, "127.0.0.1:5000", ""); got != http.StatusConflict {
			t.Fatalf("drain after Run ended = %d, want 409", got)
		}
	})
}

func TestNewRejectsNilBackplane(t *testing.T) {
	if _, err := fleet.New(fleet.Config{NodeID: "a"}, nil, nil); !errors.Is(err, fleet.ErrConfig) {
		t.Fatalf("New with a nil backplane = %v, want ErrConfig", err)
	}
}

// TestNewRejectsUnprintableNodeID: a node id is written into logs, URLs
// and other servers' views; one with a space or a control character is
// refused.
func TestNewRejectsUnprintableNodeID(t *testing.T) {
	for _, id := range []string{"a b", "a\x1b[31mred", "a\tb", "a\u2028b", "a\u00a0b"} {
		if _, err := fleet.New(fleet.Config{NodeID: id}, memory.New(), nil); !errors.Is(err, fleet.ErrConfig) {
			t.Errorf("New with node id %q = %v, want ErrConfig", id, err)
		}
	}
}

func TestBadConfig(t *testing.T) {
	cases := map[string]fleet.Config{
		"no node id":         {},
		"node id with colon": {NodeID: "a:b"},
		"call timeout":       {NodeID: "a", Heartbeat: time.Second, CallTimeout: 2 * time.Second},
		"bad address":        {NodeID: "a", InternalAddress: "nohostport"},
		"negative load":      {NodeID: "a", MaxLoad: -1},
		"huge heartbeat":     {NodeID: "a", Heartbeat: fleet.MaxHeartbeat + 1},
		"huge drain timeout": {NodeID: "a", DrainTimeout: 25 * time.Hour},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := fleet.New(cfg, memory.New(), nil); err == nil {
				t.Fatal("no error")
			}
		})
	}
}
