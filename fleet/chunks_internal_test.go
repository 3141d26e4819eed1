package fleet

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
)

// A server may hold tens of thousands of claims, and every call's deadline
// is the same CallTimeout: a call's work must not grow with them. Against
// a backplane whose calls take a time in proportion to their keys, so
// that 20,000 keys take two deadlines, claiming, re-asserting (every
// heartbeat) and releasing 20,000 claims succeed. They used to go in one
// call each, which gave up at its deadline: the heartbeat could not renew
// the claims' lease, and they expired.
func TestManyClaimsFitTheirDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 20000
		f, err := New(Config{NodeID: "s0"}, memory.New(), nil)
		if err != nil {
			t.Fatal(err)
		}
		bp := &perKey{Backplane: f.bp, cost: 2 * f.cfg.CallTimeout / n}
		f.bp = bp
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("p%d", i)
		}
		ctx := t.Context()
		if err := f.step(ctx); err != nil {
			t.Fatal(err)
		}
		if err := f.Claim(ctx, KindPlayer, ids...); err != nil {
			t.Fatalf("Claim: %v", err)
		}
		if err := f.step(ctx); err != nil {
			t.Fatal(err)
		}
		if err := bp.gaveUp(); err != nil {
			t.Fatalf("the heartbeat's re-assertion of %d claims: %v", n, err)
		}
		if err := f.Release(ctx, KindPlayer, ids...); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if held, err := f.ClaimFree(ctx, KindPlayer, ids...); err != nil || len(held) > 0 {
			t.Fatalf("ClaimFree: %d held elsewhere, %v", len(held), err)
		}
		f.ReleaseLater(KindPlayer, ids...)
		if !f.flush(ctx) {
			t.Fatalf("the queued releases were not written: %v", bp.gaveUp())
		}
	})
}

// perKey is a backplane whose claim writes take cost a key, or until
// their context ends; it notes the calls that gave up.
type perKey struct {
	backplane.Backplane
	cost time.Duration

	mu     sync.Mutex
	failed []error
}

func (b *perKey) work(ctx context.Context, op string, keys int) error {
	t := time.NewTimer(time.Duration(keys) * b.cost)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		err := fmt.Errorf("%s of %d keys: %w", op, keys, ctx.Err())
		b.mu.Lock()
		b.failed = append(b.failed, err)
		b.mu.Unlock()
		return err
	}
}

// gaveUp returns the first call that gave up, or nil.
func (b *perKey) gaveUp() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.failed) == 0 {
		return nil
	}
	return b.failed[0]
}

func (b *perKey) Claim(ctx context.Context, owner string, keys ...backplane.Key) error {
	if err := b.work(ctx, "claim", len(keys)); err != nil {
		return err
	}
	return b.Backplane.Claim(ctx, owner, keys...)
}

func (b *perKey) Release(ctx context.Context, owner string, keys ...backplane.Key) error {
	if err := b.work(ctx, "release", len(keys)); err != nil {
		return err
	}
	return b.Backplane.Release(ctx, owner, keys...)
}

func (b *perKey) Reassert(ctx context.Context, owner string, lease time.Duration, keys ...backplane.Key) ([]backplane.Key, error) {
	if err := b.work(ctx, "reassert", len(keys)); err != nil {
		return nil, err
	}
	return b.Backplane.Reassert(ctx, owner, lease, keys...)
}
