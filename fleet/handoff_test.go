package fleet_test

import (
	"errors"
	"testing"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
)

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
