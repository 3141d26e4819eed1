package fleet_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
)

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

// ReleaseLater gives a claim up at once and writes the release from the
// fleet's own goroutine, every queued release in one round trip.
func TestReleaseLaterIsOneRoundTrip(t *testing.T) {
	withTwo(t, func(t *testing.T, a, b *fleettest.Server) {
		ctx := t.Context()
		if err := a.Claim(ctx, fleet.KindPlayer, "p1", "p2", "p3"); err != nil {
			t.Fatal(err)
		}
		before := a.Backplane.Calls("Release")
		a.ReleaseLater(fleet.KindPlayer, "p1")
		a.ReleaseLater(fleet.KindPlayer, "p2", "p3")
		if a.Holds(fleet.KindPlayer, "p1") || a.Holds(fleet.KindPlayer, "p3") {
			t.Fatal("a claim given up with ReleaseLater is still held")
		}
		synctest.Wait()
		if n := a.Backplane.Calls("Release") - before; n > 2 || n < 1 {
			t.Fatalf("three releases took %d round trips", n)
		}
		if a.Pending() != 0 {
			t.Fatalf("%d releases still queued", a.Pending())
		}
		for _, id := range []string{"p1", "p2", "p3"} {
			if _, err := b.Locate(ctx, fleet.KindPlayer, id); !errors.Is(err, fleet.ErrNotFound) {
				t.Errorf("Locate(%s) after ReleaseLater: %v", id, err)
			}
		}
	})
}

// A release that fails stays queued and is written when the backplane
// answers again; re-assertion does not bring the claim back.
func TestReleaseLaterRetries(t *testing.T) {
	withTwo(t, func(t *testing.T, a, b *fleettest.Server) {
		ctx := t.Context()
		if err := a.Claim(ctx, fleet.KindPlayer, "p1", "p2"); err != nil {
			t.Fatal(err)
		}
		a.Backplane.Cut(true)
		a.ReleaseLater(fleet.KindPlayer, "p1")
		time.Sleep(hb)
		synctest.Wait()
		if a.Pending() != 1 {
			t.Fatalf("after a failed flush %d releases are queued, want 1", a.Pending())
		}
		a.Backplane.Cut(false)
		time.Sleep(hb)
		synctest.Wait()
		if a.Pending() != 0 {
			t.Fatalf("after the backplane returned %d releases are queued", a.Pending())
		}
		if _, err := b.Locate(ctx, fleet.KindPlayer, "p1"); !errors.Is(err, fleet.ErrNotFound) {
			t.Errorf("Locate(p1) after the retried release: %v", err)
		}
		if n, err := b.Locate(ctx, fleet.KindPlayer, "p2"); err != nil || n.ID != "s0" {
			t.Errorf("Locate(p2), still held: %+v, %v", n, err)
		}
		if a.Holds(fleet.KindPlayer, "p1") {
			t.Error("re-assertion restored a released claim")
		}
	})
}

// Claiming an id again cancels its queued release.
func TestClaimCancelsReleaseLater(t *testing.T) {
	withTwo(t, func(t *testing.T, a, b *fleettest.Server) {
		ctx := t.Context()
		if err := a.Claim(ctx, fleet.KindPlayer, "p1"); err != nil {
			t.Fatal(err)
		}
		a.Backplane.Fail("Release", fleettest.ErrInjected)
		a.ReleaseLater(fleet.KindPlayer, "p1")
		synctest.Wait()
		if err := a.Claim(ctx, fleet.KindPlayer, "p1"); err != nil {
			t.Fatal(err)
		}
		a.Backplane.Fail("Release", nil)
		time.Sleep(2 * hb)
		synctest.Wait()
		if n, err := b.Locate(ctx, fleet.KindPlayer, "p1"); err != nil || n.ID != "s0" {
			t.Fatalf("Locate(p1) claimed again after ReleaseLater: %+v, %v", n, err)
		}
		if !a.Holds(fleet.KindPlayer, "p1") || a.Pending() != 0 {
			t.Fatalf("holds %v, %d pending", a.Holds(fleet.KindPlayer, "p1"), a.Pending())
		}
	})
}

// Leaving writes the queued releases with the others.
func TestLeaveReleasesQueued(t *testing.T) {
	withTwo(t, func(t *testing.T, a, b *fleettest.Server) {
		ctx := t.Context()
		if err := a.Claim(ctx, fleet.KindPlayer, "p1", "p2"); err != nil {
			t.Fatal(err)
		}
		a.Backplane.Fail("Release", fleettest.ErrInjected)
		a.ReleaseLater(fleet.KindPlayer, "p1")
		synctest.Wait()
		a.Backplane.Fail("Release", nil)
		before := a.Backplane.Calls("Release")
		a.Stop()
		if n := a.Backplane.Calls("Release") - before; n != 1 {
			t.Errorf("leaving took %d release round trips", n)
		}
		for _, id := range []string{"p1", "p2"} {
			if _, err := b.Locate(ctx, fleet.KindPlayer, id); !errors.Is(err, fleet.ErrNotFound) {
				t.Errorf("Locate(%s) after s0 left: %v", id, err)
			}
		}
	})
}

// A server that finds at re-assertion that another took its claim over
// says so through OnClaimLost, and no longer holds it.
func TestOnClaimLost(t *testing.T) {
	withTwo(t, func(t *testing.T, a, b *fleettest.Server) {
		var mu sync.Mutex
		var lost []string
		a.OnClaimLost(func(kind, id string) {
			mu.Lock()
			lost = append(lost, kind+"/"+id)
			mu.Unlock()
		})
		ctx := t.Context()
		if err := a.Claim(ctx, fleet.KindPlayer, "x", "y"); err != nil {
			t.Fatal(err)
		}
		a.Backplane.Cut(true)
		time.Sleep(hb)
		synctest.Wait()
		if err := b.Claim(ctx, fleet.KindPlayer, "x"); err != nil {
			t.Fatal(err)
		}
		a.Backplane.Cut(false)
		time.Sleep(hb)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(lost) != 1 || lost[0] != "player/x" {
			t.Fatalf("OnClaimLost saw %v, want [player/x]", lost)
		}
		if a.Holds(fleet.KindPlayer, "x") || !a.Holds(fleet.KindPlayer, "y") {
			t.Fatal("after re-assertion s0 should hold y and not x")
		}
		if n, err := b.Locate(ctx, fleet.KindPlayer, "x"); err != nil || n.ID != "s1" {
			t.Fatalf("Locate(x) = %+v, %v; want s1", n, err)
		}
	})
}

// blockedRelease is a backplane whose Release answers only when its
// context ends.
type blockedRelease struct {
	backplane.Backplane
	calls chan struct{}
}

func (b blockedRelease) Release(ctx context.Context, _ string, _ ...backplane.Key) error {
	select {
	case b.calls <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return ctx.Err()
}

// A release cut short by the server stopping is not a failure to report:
// leaving writes it.
func TestStopDuringReleaseIsQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log strings.Builder
		bp := blockedRelease{Backplane: memory.New(), calls: make(chan struct{}, 1)}
		f := startFleet(t, fleet.Config{NodeID: "a", Heartbeat: hb}, bp, slog.New(slog.NewTextHandler(&log, nil)))
		synctest.Wait()
		if err := f.Claim(t.Context(), fleet.KindPlayer, "p1"); err != nil {
			t.Fatal(err)
		}
		f.ReleaseLater(fleet.KindPlayer, "p1")
		<-bp.calls
		f.run.End(t)
		if strings.Contains(log.String(), "will retry") {
			t.Fatalf("log of a server stopped during a release:\n%s", log.String())
		}
	})
}
