package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
)

func TestIncrementFleetWideThenLocal(t *testing.T) {
	withTwo(t, func(t *testing.T, a, b *fleettest.Server) {
		ctx := t.Context()
		if n, err := a.Increment(ctx, "ticket:x", time.Minute, 1); err != nil || n != 1 {
			t.Fatalf("first increment on a: %d, %v", n, err)
		}
		if n, err := b.Increment(ctx, "ticket:x", time.Minute, 1); err != nil || n != 2 {
			t.Fatalf("increment on b: %d, %v; want the fleet-wide count 2", n, err)
		}

		// A backplane without counters: each server counts alone.
		a.Backplane.Fail("Increment", backplane.ErrUnsupported)
		for want := int64(1); want <= 3; want++ {
			if n, err := a.Increment(ctx, "rate:ip", time.Minute, 1); err != nil || n != want {
				t.Fatalf("local increment = %d, %v; want %d", n, err, want)
			}
		}
		// Its expiry is set by the first increment.
		time.Sleep(time.Minute)
		if n, _ := a.Increment(ctx, "rate:ip", time.Minute, 1); n != 1 {
			t.Fatalf("local counter after its expiry = %d, want 1", n)
		}

		// Cut off: counts go on in memory, nothing fails.
		b.Backplane.Cut(true)
		time.Sleep(hb)
		synctest.Wait()
		if n, err := b.Increment(ctx, "ticket:y", time.Minute, 1); err != nil || n != 1 {
			t.Fatalf("increment while the backplane is away = %d, %v", n, err)
		}
	})
}
