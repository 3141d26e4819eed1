package fleet_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
)

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

// TestHandoffConfirm: a handoff that Arrive or TakeHandoff finds is
// confirmed at once and never found again; one whose confirm fails is
// held for three call deadlines and then found again, as one whose take
// gave up before its answer came would be.
func TestHandoffConfirm(t *testing.T) {
	withTwo(t, func(t *testing.T, a, b *fleettest.Server) {
		ctx := t.Context()
		for _, id := range []string{"confirmed", "lost", "taken"} {
			if err := a.PutHandoff(ctx, "s1", id, []byte("place of "+id)); err != nil {
				t.Fatal(err)
			}
		}
		arrive := func(id string) string {
			t.Helper()
			_, data, err := b.Arrive(ctx, fleet.KindPlayer, id)
			if err != nil {
				t.Fatalf("Arrive(%s): %v", id, err)
			}
			return string(data)
		}
		take := func(id string) string {
			t.Helper()
			data, err := b.TakeHandoff(ctx, id)
			if err != nil && !errors.Is(err, fleet.ErrNotFound) {
				t.Fatalf("TakeHandoff(%s): %v", id, err)
			}
			return string(data)
		}

		before := b.Backplane.Calls("ConfirmHandoff")
		if d := arrive("confirmed"); d != "place of confirmed" {
			t.Fatalf("Arrive = %q, want the handoff", d)
		}
		if n := b.Backplane.Calls("ConfirmHandoff") - before; n != 1 {
			t.Fatalf("Arrive that found a handoff confirmed it %d times, want once", n)
		}
		b.Backplane.Fail("ConfirmHandoff", fleettest.ErrInjected)
		if d := arrive("lost"); d != "place of lost" {
			t.Fatalf("Arrive whose confirm fails = %q, want the handoff all the same", d)
		}
		if d := take("taken"); d != "place of taken" {
			t.Fatalf("TakeHandoff whose confirm fails = %q, want the handoff all the same", d)
		}
		b.Backplane.Fail("ConfirmHandoff", nil)
		if d, e := arrive("lost"), take("taken"); d != "" || e != "" {
			t.Fatalf("during the hold of a take not confirmed: %q, %q; want nothing", d, e)
		}

		time.Sleep(3 * b.Config().CallTimeout)
		if d := arrive("confirmed"); d != "" {
			t.Fatalf("a confirmed handoff after the hold = %q, want nothing", d)
		}
		if d := arrive("lost"); d != "place of lost" {
			t.Fatalf("Arrive after the hold of a take not confirmed = %q, want the handoff again", d)
		}
		if d := take("taken"); d != "place of taken" {
			t.Fatalf("TakeHandoff after the hold of a take not confirmed = %q, want the handoff again", d)
		}
		if d, e := arrive("lost"), take("taken"); d != "" || e != "" {
			t.Fatalf("after the takes were confirmed: %q, %q; want nothing", d, e)
		}
	})
}
