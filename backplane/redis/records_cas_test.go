package redis_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/internal/testbin"
)

func TestSwapRecordsMiniredis(t *testing.T) {
	mr := miniredis.RunT(t)
	testSwapRecords(t, open(t, mr.Addr(), "c"), open(t, mr.Addr(), "c"))
}

func TestSwapRecordsRedisServer(t *testing.T) {
	testbin.Need(t, "redis-server")
	srv := testbin.StartRedis(t)
	testSwapRecords(t, open(t, srv.Addr, "c"), open(t, srv.Addr, "c"))
}

func testSwapRecords(t *testing.T, a, b *redis.Backplane) {
	ctx := t.Context()
	swap := func(bp *redis.Backplane, s ...backplane.RecordSwap) bool {
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
	if got, _ := a.Record(ctx, "z", "9"); string(got) != "new" {
		t.Fatalf("after a swap: %q", got)
	}
	if _, err := a.Record(ctx, "y", "1"); !errors.Is(err, backplane.ErrNotFound) {
		t.Fatalf("a check created its record: %v", err)
	}
	if !swap(a, backplane.RecordSwap{Collection: "x", ID: "1", Old: []byte("v2")}) {
		t.Fatal("delete refused")
	}
	if _, err := a.Record(ctx, "x", "1"); !errors.Is(err, backplane.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	var wg sync.WaitGroup
	for _, bp := range []*redis.Backplane{a, b, a, b} {
		wg.Go(func() {
			for range 100 {
				for {
					old, err := bp.Record(ctx, "n", "n")
					if errors.Is(err, backplane.ErrNotFound) {
						old = nil
					} else if err != nil {
						t.Error(err)
						return
					}
					next := append(append([]byte(nil), old...), '.')
					if ok, err := bp.SwapRecords(ctx, backplane.RecordSwap{Collection: "n", ID: "n", Old: old, New: next}); err != nil {
						t.Error(err)
						return
					} else if ok {
						break
					}
				}
			}
		})
	}
	wg.Wait()
	if got, _ := a.Record(ctx, "n", "n"); len(got) != 400 {
		t.Fatalf("400 racing increments left %d", len(got))
	}
}
