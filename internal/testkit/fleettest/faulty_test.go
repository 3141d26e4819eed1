package fleettest_test

import (
	"errors"
	"testing"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
)

// TestFaulty: a cut fails every call, the compare-and-set included; Fail
// fails one operation; Drop loses a Release without an error; every call
// is counted.
func TestFaulty(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := fleettest.NewFaulty(memory.New())
	key := backplane.Key{Kind: "player", ID: "alice"}
	swap := backplane.RecordSwap{Collection: "c", ID: "r", New: []byte("x")}

	f.Cut(true)
	if _, err := f.SwapRecords(ctx, swap); !errors.Is(err, fleettest.ErrInjected) {
		t.Fatalf("SwapRecords while cut = %v, want ErrInjected", err)
	}
	f.Cut(false)
	if done, err := f.SwapRecords(ctx, swap); !done || err != nil {
		t.Fatalf("SwapRecords = %v, %v; want done", done, err)
	}

	lost := errors.New("lost")
	f.Fail("Claim", lost)
	if err := f.Claim(ctx, "s0", key); err != lost {
		t.Fatalf("failed Claim = %v, want %v", err, lost)
	}
	f.Fail("Claim", nil)
	if err := f.Claim(ctx, "s0", key); err != nil {
		t.Fatal(err)
	}

	f.Drop("Release", true)
	if err := f.Release(ctx, "s0", key); err != nil {
		t.Fatalf("dropped Release = %v, want nil", err)
	}
	if owner, err := f.Locate(ctx, key); owner != "s0" || err != nil {
		t.Fatalf("Locate after a dropped Release = %q, %v; want s0", owner, err)
	}

	for op, want := range map[string]int{"SwapRecords": 2, "Claim": 2, "Release": 1, "Locate": 1, "Nodes": 0} {
		if got := f.Calls(op); got != want {
			t.Errorf("Calls(%q) = %d, want %d", op, got, want)
		}
	}
}
