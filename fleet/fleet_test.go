package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const hb = fleettest.Heartbeat

// ids returns the ids of a server's view.
func ids(f *fleet.Fleet) string {
	var out []string
	for _, n := range f.Nodes() {
		out = append(out, n.ID)
	}
	return fmt.Sprint(out)
}

// startSeen starts n servers and lets one heartbeat pass, so that each
// sees the others. Call it in a synctest bubble.
func startSeen(t *testing.T, n int) *fleettest.Cluster {
	t.Helper()
	c := fleettest.Start(t, n, nil)
	time.Sleep(hb)
	synctest.Wait()
	return c
}

// newFleet returns fleet.New(cfg, bp, logger), failing the test on an
// error.
func newFleet(t *testing.T, cfg fleet.Config, bp backplane.Backplane, logger *slog.Logger) *fleet.Fleet {
	t.Helper()
	f, err := fleet.New(cfg, bp, logger)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// running is a fleet whose Run runs on a goroutine of its own until
// run.End, or until the test ends.
type running struct {
	*fleet.Fleet
	run *testrun.Running
}

// startFleet runs a new fleet of cfg on bp (see newFleet).
func startFleet(t *testing.T, cfg fleet.Config, bp backplane.Backplane, logger *slog.Logger) *running {
	t.Helper()
	f := newFleet(t, cfg, bp, logger)
	return &running{Fleet: f, run: testrun.Start(t, f.Run)}
}

// withSeen runs test in a synctest bubble on n servers started with
// startSeen.
func withSeen(t *testing.T, n int, test func(t *testing.T, c *fleettest.Cluster)) {
	synctest.Test(t, func(t *testing.T) { test(t, startSeen(t, n)) })
}

// withTwo is withSeen for two servers, a and b.
func withTwo(t *testing.T, test func(t *testing.T, a, b *fleettest.Server)) {
	withSeen(t, 2, func(t *testing.T, c *fleettest.Cluster) { test(t, c.Servers[0], c.Servers[1]) })
}

func TestViewAfterOneHeartbeat(t *testing.T) {
	withSeen(t, 3, func(t *testing.T, c *fleettest.Cluster) {
		for _, s := range c.Servers {
			if got := ids(s.Fleet); got != "[s0 s1 s2]" {
				t.Errorf("%s sees %s after one heartbeat", s.ID(), got)
			}
		}
		// A stat is published with s0's next heartbeat and read with the
		// others' next one: within two heartbeats whatever their phase.
		time.Sleep(hb / 3)
		c.Servers[0].SetStat("queue:duel", 7)
		time.Sleep(2 * hb)
		synctest.Wait()
		for _, s := range c.Servers {
			n, ok := s.Node("s0")
			if !ok || n.Stat("queue:duel") != 7 || n.State != fleet.StateReady || n.MaxLoad != 200 {
				t.Errorf("%s reads s0 as %+v", s.ID(), n)
			}
			if s.Alone() {
				t.Errorf("%s is alone among three", s.ID())
			}
		}
	})
}

func TestGoneAfterThreeMissedHeartbeats(t *testing.T) {
	withSeen(t, 3, func(t *testing.T, c *fleettest.Cluster) {
		c.Servers[2].Kill()
		time.Sleep(2 * hb) // two missed: still there
		synctest.Wait()
		if got := ids(c.Servers[0].Fleet); got != "[s0 s1 s2]" {
			t.Fatalf("after two missed heartbeats s0 sees %s", got)
		}
		time.Sleep(hb) // the third
		synctest.Wait()
		for _, s := range c.Servers[:2] {
			if got := ids(s.Fleet); got != "[s0 s1]" {
				t.Errorf("after three missed heartbeats %s sees %s", s.ID(), got)
			}
		}
	})
}

// A dead server is gone from every view when its record expires, three
// heartbeats after its last one, even when that falls between the
// others' heartbeats.
func TestGoneWhenRecordExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fleettest.Start(t, 3, nil)
		time.Sleep(hb + hb/2)
		c.Servers[2].MarkReady() // a heartbeat out of the others' phase
		synctest.Wait()
		last := time.Now()
		c.Servers[2].Kill()
		expiry := last.Add(fleet.MissedHeartbeats * hb)
		time.Sleep(time.Until(expiry) - time.Millisecond)
		for _, s := range c.Servers[:2] {
			if got := ids(s.Fleet); got != "[s0 s1 s2]" {
				t.Fatalf("a millisecond before s2's record expires %s sees %s", s.ID(), got)
			}
		}
		time.Sleep(time.Millisecond) // between the others' heartbeats
		for _, s := range c.Servers[:2] {
			if got := ids(s.Fleet); got != "[s0 s1]" {
				t.Errorf("when s2's record expires %s sees %s", s.ID(), got)
			}
			if _, ok := s.InternalAddress("s2"); ok {
				t.Errorf("%s still relays to s2", s.ID())
			}
		}
	})
}

func TestLeaveIsAtOnce(t *testing.T) {
	withSeen(t, 3, func(t *testing.T, c *fleettest.Cluster) {
		if err := c.Servers[2].Claim(t.Context(), fleet.KindLobby, "ABCD"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(hb / 2)
		if err := c.Servers[2].Drain(t.Context()); err != nil {
			t.Fatal(err)
		}
		<-c.Servers[2].Done()
		// Its claims point nowhere at once.
		if _, err := c.Servers[0].Locate(t.Context(), fleet.KindLobby, "ABCD"); !errors.Is(err, fleet.ErrNotFound) {
			t.Fatalf("Locate of a departed server's lobby: %v", err)
		}
		time.Sleep(hb / 2) // the others' next heartbeat
		synctest.Wait()
		if got := ids(c.Servers[0].Fleet); got != "[s0 s1]" {
			t.Fatalf("one heartbeat after s2 left, s0 sees %s", got)
		}
	})
}

func TestAloneIsInert(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startFleet(t, fleet.Config{NodeID: "solo"}, memory.New(), nil)
		time.Sleep(5 * hb)
		synctest.Wait()
		if !f.Alone() || ids(f.Fleet) != "[solo]" {
			t.Fatalf("a single server: Alone %v, view %s", f.Alone(), ids(f.Fleet))
		}
		if _, ok := f.InternalAddress("solo"); ok {
			t.Fatal("the relay may reach this server through itself")
		}
		f.run.End(t)
	})
}

// A server stopped before its first heartbeat ends reports no outage: a
// heartbeat cut short by the stop is not the backplane failing.
func TestStopIsNotAnOutage(t *testing.T) {
	var log strings.Builder
	f := newFleet(t, fleet.Config{NodeID: "solo"}, memory.New(), slog.New(slog.NewTextHandler(&log, nil)))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := f.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "unreachable") {
		t.Fatalf("log of a stopped server:\n%s", log.String())
	}
}

// One heartbeat over its deadline leaves the view as it was, and the
// claims are re-asserted in one round trip; only failures that span the
// ttl leave the server alone.
func TestSlowHeartbeatKeepsView(t *testing.T) {
	withSeen(t, 3, func(t *testing.T, c *fleettest.Cluster) {
		a := c.Servers[0]
		ids10 := make([]string, 10)
		for i := range ids10 {
			ids10[i] = string(rune('a' + i))
		}
		if err := a.Claim(t.Context(), fleet.KindPlayer, ids10...); err != nil {
			t.Fatal(err)
		}
		a.Backplane.Fail("Heartbeat", context.DeadlineExceeded)
		time.Sleep(hb)
		synctest.Wait()
		if got := ids(a.Fleet); got != "[s0 s1 s2]" || a.Alone() {
			t.Fatalf("after one slow heartbeat s0 sees %s (alone %v)", got, a.Alone())
		}
		a.Backplane.Fail("Heartbeat", nil)
		unique, reasserts := a.Backplane.Calls("ClaimUnique"), a.Backplane.Calls("Reassert")
		time.Sleep(hb)
		synctest.Wait()
		if got := ids(a.Fleet); got != "[s0 s1 s2]" {
			t.Fatalf("after the heartbeat that followed, s0 sees %s", got)
		}
		if n := a.Backplane.Calls("ClaimUnique") - unique; n != 0 {
			t.Errorf("re-assertion of 10 claims made %d ClaimUnique calls", n)
		}
		if n := a.Backplane.Calls("Reassert") - reasserts; n != 1 {
			t.Errorf("re-assertion of 10 claims took %d round trips, want 1", n)
		}

		// Failures that span the ttl: alone.
		a.Backplane.Cut(true)
		time.Sleep(fleet.MissedHeartbeats*hb - hb/2)
		synctest.Wait()
		if a.Alone() {
			t.Fatal("s0 is alone before its failures span the ttl")
		}
		time.Sleep(hb)
		synctest.Wait()
		if !a.Alone() {
			t.Fatalf("s0 cut off for a ttl still sees %s", ids(a.Fleet))
		}
	})
}
