package backplane

import (
	"context"
	"errors"
	"time"
)

// Hooks are what a backplane made by Wrap calls around each call it passes
// on, such as to measure calls or to inject faults. Either may be nil.
// They run on the caller's goroutine, concurrently when the backplane is
// used concurrently; a hook that allocates nothing keeps the wrapped
// backplane from allocating more than the one it wraps.
type Hooks struct {
	// Before is called first, with the call's context and operation. A
	// nil error lets the call through; any other ends it there, with zero
	// results and that error, or a nil error for SkipCall.
	Before func(ctx context.Context, op Op) error

	// After is called when a call that Before let through returns, with
	// when it was passed on and the error it returned.
	After func(op Op, began time.Time, err error)
}

// SkipCall, returned by a Hooks.Before, ends the call without passing it
// on and with a nil error, as a write acknowledged and then lost would. It
// is not an error: no backplane call returns it.
var SkipCall = errors.New("backplane: call skipped")

// Wrap returns a backplane that passes every call on to bp with hooks
// around it, and Close straight through. The result implements each
// optional interface of this package (RecordSwapper) that bp implements,
// and no other, so that a caller's type assertion finds on it what it
// would find on bp; the optional operations are hooked too. An optional
// interface added to this package is passed on here.
func Wrap(bp Backplane, hooks Hooks) Backplane {
	w := &wrapped{next: bp, hooks: hooks}
	if s, ok := bp.(RecordSwapper); ok {
		return &wrappedSwapper{wrapped: w, swapper: s}
	}
	return w
}

var (
	_ Backplane     = (*wrapped)(nil)
	_ RecordSwapper = (*wrappedSwapper)(nil)
)

// wrapped is the backplane Wrap returns for a bp with no optional
// interface.
type wrapped struct {
	next  Backplane
	hooks Hooks
}

// wrappedSwapper is the backplane Wrap returns for a bp that is a
// RecordSwapper.
type wrappedSwapper struct {
	*wrapped
	swapper RecordSwapper
}

// before runs the Before hook for op. stop reports that the call ends
// there, with err; otherwise began is when the call is passed on.
func (w *wrapped) before(ctx context.Context, op Op) (began time.Time, stop bool, err error) {
	if w.hooks.Before != nil {
		switch err := w.hooks.Before(ctx, op); {
		case errors.Is(err, SkipCall):
			return began, true, nil
		case err != nil:
			return began, true, err
		}
	}
	if w.hooks.After != nil {
		began = time.Now()
	}
	return began, false, nil
}

// after runs the After hook for a call of op that began at began and
// returned err, and returns err.
func (w *wrapped) after(op Op, began time.Time, err error) error {
	if w.hooks.After != nil {
		w.hooks.After(op, began, err)
	}
	return err
}

func (w *wrapped) Heartbeat(ctx context.Context, node Node, ttl time.Duration) ([]Node, bool, error) {
	began, stop, err := w.before(ctx, OpHeartbeat)
	if stop {
		return nil, false, err
	}
	nodes, created, err := w.next.Heartbeat(ctx, node, ttl)
	return nodes, created, w.after(OpHeartbeat, began, err)
}

func (w *wrapped) Nodes(ctx context.Context) ([]Node, error) {
	began, stop, err := w.before(ctx, OpNodes)
	if stop {
		return nil, err
	}
	nodes, err := w.next.Nodes(ctx)
	return nodes, w.after(OpNodes, began, err)
}

func (w *wrapped) Leave(ctx context.Context, id string) error {
	began, stop, err := w.before(ctx, OpLeave)
	if stop {
		return err
	}
	return w.after(OpLeave, began, w.next.Leave(ctx, id))
}

func (w *wrapped) Claim(ctx context.Context, owner string, keys ...Key) error {
	began, stop, err := w.before(ctx, OpClaim)
	if stop {
		return err
	}
	return w.after(OpClaim, began, w.next.Claim(ctx, owner, keys...))
}

func (w *wrapped) ClaimUnique(ctx context.Context, owner string, key Key) (string, error) {
	began, stop, err := w.before(ctx, OpClaimUnique)
	if stop {
		return "", err
	}
	holder, err := w.next.ClaimUnique(ctx, owner, key)
	return holder, w.after(OpClaimUnique, began, err)
}

func (w *wrapped) Reassert(ctx context.Context, owner string, lease time.Duration, keys ...Key) ([]Key, error) {
	began, stop, err := w.before(ctx, OpReassert)
	if stop {
		return nil, err
	}
	lost, err := w.next.Reassert(ctx, owner, lease, keys...)
	return lost, w.after(OpReassert, began, err)
}

func (w *wrapped) Release(ctx context.Context, owner string, keys ...Key) error {
	began, stop, err := w.before(ctx, OpRelease)
	if stop {
		return err
	}
	return w.after(OpRelease, began, w.next.Release(ctx, owner, keys...))
}

func (w *wrapped) Locate(ctx context.Context, key Key) (string, error) {
	began, stop, err := w.before(ctx, OpLocate)
	if stop {
		return "", err
	}
	owner, err := w.next.Locate(ctx, key)
	return owner, w.after(OpLocate, began, err)
}

func (w *wrapped) Arrive(ctx context.Context, key Key, target, id string, hold time.Duration) (string, Taken, error) {
	began, stop, err := w.before(ctx, OpArrive)
	if stop {
		return "", Taken{}, err
	}
	owner, taken, err := w.next.Arrive(ctx, key, target, id, hold)
	return owner, taken, w.after(OpArrive, began, err)
}

func (w *wrapped) PutHandoff(ctx context.Context, target, id string, data []byte, ttl time.Duration) error {
	began, stop, err := w.before(ctx, OpPutHandoff)
	if stop {
		return err
	}
	return w.after(OpPutHandoff, began, w.next.PutHandoff(ctx, target, id, data, ttl))
}

func (w *wrapped) TakeHandoff(ctx context.Context, target, id string, hold time.Duration) (Taken, error) {
	began, stop, err := w.before(ctx, OpTakeHandoff)
	if stop {
		return Taken{}, err
	}
	taken, err := w.next.TakeHandoff(ctx, target, id, hold)
	return taken, w.after(OpTakeHandoff, began, err)
}

func (w *wrapped) ConfirmHandoff(ctx context.Context, target, id, token string) error {
	began, stop, err := w.before(ctx, OpConfirmHandoff)
	if stop {
		return err
	}
	return w.after(OpConfirmHandoff, began, w.next.ConfirmHandoff(ctx, target, id, token))
}

func (w *wrapped) Increment(ctx context.Context, key string, ttl time.Duration, by int64) (int64, error) {
	began, stop, err := w.before(ctx, OpIncrement)
	if stop {
		return 0, err
	}
	n, err := w.next.Increment(ctx, key, ttl, by)
	return n, w.after(OpIncrement, began, err)
}

func (w *wrapped) PutRecord(ctx context.Context, collection, id string, data []byte) error {
	began, stop, err := w.before(ctx, OpPutRecord)
	if stop {
		return err
	}
	return w.after(OpPutRecord, began, w.next.PutRecord(ctx, collection, id, data))
}

func (w *wrapped) Record(ctx context.Context, collection, id string) ([]byte, error) {
	began, stop, err := w.before(ctx, OpRecord)
	if stop {
		return nil, err
	}
	data, err := w.next.Record(ctx, collection, id)
	return data, w.after(OpRecord, began, err)
}

func (w *wrapped) DeleteRecord(ctx context.Context, collection, id string) error {
	began, stop, err := w.before(ctx, OpDeleteRecord)
	if stop {
		return err
	}
	return w.after(OpDeleteRecord, began, w.next.DeleteRecord(ctx, collection, id))
}

func (w *wrapped) Records(ctx context.Context, collection string) (map[string][]byte, error) {
	began, stop, err := w.before(ctx, OpRecords)
	if stop {
		return nil, err
	}
	recs, err := w.next.Records(ctx, collection)
	return recs, w.after(OpRecords, began, err)
}

func (w *wrapped) Close() error { return w.next.Close() }

func (w *wrappedSwapper) SwapRecords(ctx context.Context, swaps ...RecordSwap) (bool, error) {
	began, stop, err := w.before(ctx, OpSwapRecords)
	if stop {
		return false, err
	}
	done, err := w.swapper.SwapRecords(ctx, swaps...)
	return done, w.after(OpSwapRecords, began, err)
}
