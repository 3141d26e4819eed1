package memory_test

import (
	"sync"
	"testing"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
)

func TestSwapRecords(t *testing.T) {
	t.Parallel()
	store := memory.NewStore(memory.Config{})
	a, _ := store.Cluster("c")
	b, _ := store.Cluster("c")
	ctx := t.Context()
	swap := func(bp *memory.Backplane, s ...backplane.RecordSwap) bool {
		t.Helper()
		ok, err := bp.SwapRecords(ctx, s...)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !swap(a, backplane.RecordSwap{Collection: "x", ID: "1", New: []byte("v1")}) {
		t.Fatal("create of an absent record refused")
	}
	if swap(b, backplane.RecordSwap{Collection: "x", ID: "1", New: []byte("v2")}) {
		t.Fatal("create over a present record accepted")
	}
	// A failed check writes nothing, not even the swaps that matched.
	if swap(b,
		backplane.RecordSwap{Collection: "x", ID: "1", Old: []byte("v1"), New: []byte("v2")},
		backplane.RecordSwap{Collection: "y", ID: "1", Old: []byte("nope"), Check: true}) {
		t.Fatal("a swap with a failed check was made")
	}
	if got, _ := a.Record(ctx, "x", "1"); string(got) != "v1" {
		t.Fatalf("after a failed swap: %q", got)
	}
	if !swap(b,
		backplane.RecordSwap{Collection: "x", ID: "1", Old: []byte("v1"), New: []byte("v2")},
		backplane.RecordSwap{Collection: "y", ID: "1", Check: true},
		backplane.RecordSwap{Collection: "z", ID: "9", New: []byte("new")}) {
		t.Fatal("a matching swap was refused")
	}
	if got, _ := a.Record(ctx, "x", "1"); string(got) != "v2" {
		t.Fatalf("after a swap: %q", got)
	}
	if _, err := a.Record(ctx, "y", "1"); err != backplane.ErrNotFound {
		t.Fatalf("a check created its record: %v", err)
	}
	if !swap(a, backplane.RecordSwap{Collection: "x", ID: "1", Old: []byte("v2")}) {
		t.Fatal("delete refused")
	}
	if _, err := a.Record(ctx, "x", "1"); err != backplane.ErrNotFound {
		t.Fatalf("after delete: %v", err)
	}

	// Racing increments by read and swap lose nothing.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				for {
					old, err := a.Record(ctx, "n", "n")
					if err == backplane.ErrNotFound {
						old = nil
					}
					next := append([]byte(nil), old...)
					next = append(next, '.')
					if ok, _ := b.SwapRecords(ctx, backplane.RecordSwap{Collection: "n", ID: "n", Old: old, New: next}); ok {
						break
					}
				}
			}
		})
	}
	wg.Wait()
	if got, _ := a.Record(ctx, "n", "n"); len(got) != 1600 {
		t.Fatalf("1600 racing increments left %d", len(got))
	}
}
