package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
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

func TestClaims(t *testing.T) {
	withSeen(t, 3, func(t *testing.T, c *fleettest.Cluster) {
		a, b, dead := c.Servers[0], c.Servers[1], c.Servers[2]
		ctx := t.Context()
		if err := a.Claim(ctx, fleet.KindPlayer, "p1"); err != nil {
			t.Fatal(err)
		}
		if n, err := b.Locate(ctx, fleet.KindPlayer, "p1"); err != nil || n.ID != "s0" || n.InternalAddress == "" {
			t.Fatalf("Locate(p1) from s1 = %+v, %v; want s0 with its address", n, err)
		}
		if _, err := b.Locate(ctx, fleet.KindPlayer, "nobody"); !errors.Is(err, fleet.ErrNotFound) {
			t.Fatalf("Locate of an unclaimed player: %v", err)
		}

		// Release never removes another server's claim.
		if err := b.Release(ctx, fleet.KindPlayer, "p1"); err != nil {
			t.Fatal(err)
		}
		if n, err := b.Locate(ctx, fleet.KindPlayer, "p1"); err != nil || n.ID != "s0" {
			t.Fatalf("s1's release moved s0's claim: %+v, %v", n, err)
		}

		// A dead server's claims point nowhere, and its unique ones can be
		// taken over.
		if err := dead.ClaimUnique(ctx, fleet.KindLobby, "K7QX"); err != nil {
			t.Fatal(err)
		}
		if err := a.ClaimUnique(ctx, fleet.KindLobby, "K7QX"); !errors.Is(err, fleet.ErrHeld) {
			t.Fatalf("claim of a live server's lobby: %v, want ErrHeld", err)
		}
		dead.Kill()
		time.Sleep(fleet.MissedHeartbeats * hb)
		synctest.Wait()
		if _, err := a.Locate(ctx, fleet.KindLobby, "K7QX"); !errors.Is(err, fleet.ErrNotFound) {
			t.Fatalf("Locate of a dead server's lobby: %v", err)
		}
		if err := a.ClaimUnique(ctx, fleet.KindLobby, "K7QX"); err != nil {
			t.Fatalf("take-over of a dead server's lobby: %v", err)
		}
	})
}

func TestClaimUniqueRace32(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fleettest.Start(t, 32, nil)
		time.Sleep(hb)
		synctest.Wait()
		var wg sync.WaitGroup
		var mu sync.Mutex
		winners := 0
		for _, s := range c.Servers {
			wg.Go(func() {
				err := s.ClaimUnique(t.Context(), fleet.KindLobby, "RACE")
				switch {
				case err == nil:
					mu.Lock()
					winners++
					mu.Unlock()
				case !errors.Is(err, fleet.ErrHeld):
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if winners != 1 {
			t.Fatalf("%d of 32 servers won the lobby code", winners)
		}
	})
}

func TestHandoffs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fleettest.Start(t, 3, nil)
		a, b, other := c.Servers[0], c.Servers[1], c.Servers[2]
		ctx := t.Context()
		if err := a.PutHandoff(ctx, "s1", "p1", []byte("queue duel waited 4.2s")); err != nil {
			t.Fatal(err)
		}
		if _, err := other.TakeHandoff(ctx, "p1"); !errors.Is(err, fleet.ErrNotFound) {
			t.Fatalf("a server that is not the target took the handoff: %v", err)
		}
		data, err := b.TakeHandoff(ctx, "p1")
		if err != nil || string(data) != "queue duel waited 4.2s" {
			t.Fatalf("target's take = %q, %v", data, err)
		}
		if _, err := b.TakeHandoff(ctx, "p1"); !errors.Is(err, fleet.ErrNotFound) {
			t.Fatalf("second take: %v", err)
		}

		if err := a.PutHandoff(ctx, "s1", "p2", []byte("x")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(fleet.HandoffTTL)
		if _, err := b.TakeHandoff(ctx, "p2"); !errors.Is(err, fleet.ErrNotFound) {
			t.Fatalf("take after %v: %v", fleet.HandoffTTL, err)
		}
	})
}

func TestArrive(t *testing.T) {
	withSeen(t, 3, func(t *testing.T, c *fleettest.Cluster) {
		a, b, dead := c.Servers[0], c.Servers[1], c.Servers[2]
		ctx := t.Context()
		arrive := func(s *fleettest.Server, id string) (string, string) {
			t.Helper()
			holder, data, err := s.Arrive(ctx, fleet.KindPlayer, id)
			if err != nil {
				t.Fatalf("%s: Arrive(%s): %v", s.ID(), id, err)
			}
			return holder.ID, string(data)
		}
		if h, d := arrive(b, "p1"); h != "" || d != "" {
			t.Fatalf("Arrive with nothing stored = %q, %q", h, d)
		}

		// Held on a, sent to b with a queue place: b finds both, in one call.
		if err := a.Claim(ctx, fleet.KindPlayer, "p1", "p2"); err != nil {
			t.Fatal(err)
		}
		if err := a.PutHandoff(ctx, "s1", "p1", []byte("waited 4.2s")); err != nil {
			t.Fatal(err)
		}
		before := b.Backplane.Calls("Arrive")
		if h, d := arrive(b, "p1"); h != "s0" || d != "waited 4.2s" {
			t.Fatalf("Arrive(p1) on s1 = %q, %q; want s0 and the handoff", h, d)
		}
		if n := b.Backplane.Calls("Arrive") - before; n != 1 {
			t.Fatalf("Arrive made %d backplane calls", n)
		}
		if h, d := arrive(b, "p1"); h != "s0" || d != "" {
			t.Fatalf("second Arrive(p1) = %q, %q; the handoff is taken once", h, d)
		}
		// This server's own claim; its handoff is taken all the same.
		if err := b.PutHandoff(ctx, "s0", "p2", []byte("lobby")); err != nil {
			t.Fatal(err)
		}
		if h, d := arrive(a, "p2"); h != "s0" || d != "lobby" {
			t.Fatalf("Arrive(p2) on its holder = %q, %q", h, d)
		}

		// Claims released together; a dead holder is nobody.
		if err := a.Release(ctx, fleet.KindPlayer, "p1", "p2"); err != nil {
			t.Fatal(err)
		}
		if h, _ := arrive(b, "p2"); h != "" {
			t.Fatalf("Arrive(p2) after release = %q", h)
		}
		if err := dead.Claim(ctx, fleet.KindPlayer, "p3"); err != nil {
			t.Fatal(err)
		}
		if h, _ := arrive(b, "p3"); h != "s2" {
			t.Fatalf("Arrive(p3) = %q, want s2", h)
		}
		dead.Kill()
		time.Sleep(fleet.MissedHeartbeats * hb)
		synctest.Wait()
		if h, _ := arrive(b, "p3"); h != "" {
			t.Fatalf("Arrive(p3) once its holder is dead = %q, want nobody", h)
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
