package fleet_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// A release that the store acknowledged and then lost (a failover) leaves
// a claim pointing at a live server that no longer holds it: it stops
// pointing anywhere within one ttl.
func TestLostReleaseCleanedWithinTTL(t *testing.T) {
	withTwo(t, func(t *testing.T, a, b *fleettest.Server) {
		ctx := t.Context()
		if err := a.Claim(ctx, fleet.KindPlayer, "p1", "p2"); err != nil {
			t.Fatal(err)
		}
		a.Backplane.Drop("Release", true)
		if err := a.Release(ctx, fleet.KindPlayer, "p1"); err != nil {
			t.Fatal(err)
		}
		a.Backplane.Drop("Release", false)
		if n, err := b.Locate(ctx, fleet.KindPlayer, "p1"); err != nil || n.ID != "s0" {
			t.Fatalf("the lost release: Locate(p1) = %+v, %v; want the stale s0", n, err)
		}
		time.Sleep(fleet.MissedHeartbeats * hb)
		synctest.Wait()
		if n, err := b.Locate(ctx, fleet.KindPlayer, "p1"); !errors.Is(err, fleet.ErrNotFound) {
			t.Errorf("one ttl after a lost release, Locate(p1) = %+v, %v; want ErrNotFound", n, err)
		}
		if holder, _, err := b.Arrive(ctx, fleet.KindPlayer, "p1"); err != nil || holder.ID != "" {
			t.Errorf("one ttl after a lost release, Arrive(p1) = %+v, %v; want no holder", holder, err)
		}
		if n, err := b.Locate(ctx, fleet.KindPlayer, "p2"); err != nil || n.ID != "s0" {
			t.Errorf("a claim still held: Locate(p2) = %+v, %v", n, err)
		}
	})
}

// A claim written and then lost by the store (a failover) is written
// again within a heartbeat, though no heartbeat failed.
func TestLostClaimHealsWithinHeartbeat(t *testing.T) {
	withTwo(t, func(t *testing.T, a, b *fleettest.Server) {
		ctx := t.Context()
		a.Backplane.Drop("Claim", true)
		if err := a.Claim(ctx, fleet.KindPlayer, "p1"); err != nil {
			t.Fatal(err)
		}
		a.Backplane.Drop("Claim", false)
		time.Sleep(hb)
		synctest.Wait()
		if n, err := b.Locate(ctx, fleet.KindPlayer, "p1"); err != nil || n.ID != "s0" {
			t.Fatalf("a heartbeat after a lost claim, Locate(p1) = %+v, %v; want s0", n, err)
		}
	})
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

// A second signal during DrainOnSignal cuts the drain short.
func TestSecondSignalCutsDrain(t *testing.T) {
	c := fleettest.Start(t, 1, func(_ int, cfg *fleet.Config) { cfg.DrainTimeout = time.Hour })
	s := c.Servers[0]
	started := make(chan struct{})
	s.AddDrainer(fleet.DrainerFunc(func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		return nil
	}))
	done := make(chan error, 1)
	go func() { done <- s.DrainOnSignal(t.Context(), syscall.SIGUSR1) }()
	p, _ := os.FindProcess(os.Getpid())
	// Until DrainOnSignal listens, the signal would kill the test: send
	// it until the drain starts.
	testrun.WaitFor(t, "drain started by the first signal", func() bool {
		select {
		case <-started:
			return true
		default:
			p.Signal(syscall.SIGUSR1)
			return false
		}
	})
	p.Signal(syscall.SIGUSR1)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second signal did not cut the drain short")
	}
}
