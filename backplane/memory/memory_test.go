package memory_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/backplanetest"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

func TestConformance(t *testing.T) {
	backplanetest.Run(t, harness(func(b backplane.Backplane) backplane.Backplane { return b }))
}

// TestConformanceWrapped runs the suite on memory backplanes wrapped by
// backplane.Wrap, with hooks that let every call through: a decorator
// keeps the contract, and the compare-and-set the suite checks.
func TestConformanceWrapped(t *testing.T) {
	var before, after atomic.Int64
	hooks := backplane.Hooks{
		Before: func(context.Context, backplane.Op) error { before.Add(1); return nil },
		After:  func(backplane.Op, time.Time, error) { after.Add(1) },
	}
	backplanetest.Run(t, harness(func(b backplane.Backplane) backplane.Backplane { return backplane.Wrap(b, hooks) }))
	if before.Load() == 0 || before.Load() != after.Load() {
		t.Fatalf("Before called %d times, After %d", before.Load(), after.Load())
	}
}

// harness returns the suite's harness for a fresh store with a manual
// clock, whose backplanes are handed to the suite through wrap.
func harness(wrap func(backplane.Backplane) backplane.Backplane) func(t *testing.T) backplanetest.Harness {
	return func(t *testing.T) backplanetest.Harness {
		clk := testrun.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		store := memory.NewStore(memory.Config{Now: clk.Now})
		var opened []backplane.Backplane
		return backplanetest.Harness{
			Open: func(t *testing.T, cluster string) backplane.Backplane {
				b, err := store.Cluster(cluster)
				if err != nil {
					t.Fatal(err)
				}
				opened = append(opened, b)
				return wrap(b)
			},
			Advance: func(_ *testing.T, d time.Duration) { clk.Advance(d) },
			Stop: func(*testing.T) {
				for _, b := range opened {
					b.Close()
				}
			},
		}
	}
}
