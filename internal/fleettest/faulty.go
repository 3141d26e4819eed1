package fleettest

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/muster-gg/muster/backplane"
)

// ErrInjected is the error a Faulty backplane returns for a failed call.
var ErrInjected = errors.New("fleettest: injected backplane failure")

// Faulty wraps a backplane so a test can make calls fail: all of them (a
// server cut off, or killed) or those of named operations ("PutHandoff").
// It also counts the calls made, by operation.
type Faulty struct {
	backplane.Backplane

	mu    sync.Mutex
	cut   bool
	fail  map[string]error
	drop  map[string]bool
	calls map[string]int
}

// NewFaulty wraps bp.
func NewFaulty(bp backplane.Backplane) *Faulty {
	return &Faulty{Backplane: bp, fail: make(map[string]error), drop: make(map[string]bool), calls: make(map[string]int)}
}

// Calls returns how many calls of the named operation (a method name of
// backplane.Backplane) were made, failed ones included.
func (f *Faulty) Calls(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// Cut makes every call fail (true) or work again (false).
func (f *Faulty) Cut(cut bool) {
	f.mu.Lock()
	f.cut = cut
	f.mu.Unlock()
}

// Fail makes calls of the named operation (a method name of
// backplane.Backplane) return err; a nil err makes them work again.
func (f *Faulty) Fail(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.fail, op)
		return
	}
	f.fail[op] = err
}

// Drop makes calls of the named operation succeed without reaching the
// store (true), as a write acknowledged and then lost in a failover, or
// reach it again (false). Release and Claim can be dropped.
func (f *Faulty) Drop(op string, drop bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drop[op] = drop
}

func (f *Faulty) dropped(op string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.drop[op]
}

func (f *Faulty) check(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	if f.cut {
		return ErrInjected
	}
	return f.fail[op]
}

// Heartbeat implements backplane.Backplane.
func (f *Faulty) Heartbeat(ctx context.Context, n backplane.Node, ttl time.Duration) ([]backplane.Node, bool, error) {
	if err := f.check("Heartbeat"); err != nil {
		return nil, false, err
	}
	return f.Backplane.Heartbeat(ctx, n, ttl)
}

// Nodes implements backplane.Backplane.
func (f *Faulty) Nodes(ctx context.Context) ([]backplane.Node, error) {
	if err := f.check("Nodes"); err != nil {
		return nil, err
	}
	return f.Backplane.Nodes(ctx)
}

// Leave implements backplane.Backplane.
func (f *Faulty) Leave(ctx context.Context, id string) error {
	if err := f.check("Leave"); err != nil {
		return err
	}
	return f.Backplane.Leave(ctx, id)
}

// Claim implements backplane.Backplane.
func (f *Faulty) Claim(ctx context.Context, owner string, keys ...backplane.Key) error {
	if err := f.check("Claim"); err != nil || f.dropped("Claim") {
		return err
	}
	return f.Backplane.Claim(ctx, owner, keys...)
}

// ClaimUnique implements backplane.Backplane.
func (f *Faulty) ClaimUnique(ctx context.Context, owner string, key backplane.Key) (string, error) {
	if err := f.check("ClaimUnique"); err != nil {
		return "", err
	}
	return f.Backplane.ClaimUnique(ctx, owner, key)
}

// Release implements backplane.Backplane.
func (f *Faulty) Release(ctx context.Context, owner string, keys ...backplane.Key) error {
	if err := f.check("Release"); err != nil || f.dropped("Release") {
		return err
	}
	return f.Backplane.Release(ctx, owner, keys...)
}

// Locate implements backplane.Backplane.
func (f *Faulty) Locate(ctx context.Context, key backplane.Key) (string, error) {
	if err := f.check("Locate"); err != nil {
		return "", err
	}
	return f.Backplane.Locate(ctx, key)
}

// Arrive implements backplane.Backplane.
func (f *Faulty) Arrive(ctx context.Context, key backplane.Key, target, id string, hold time.Duration) (string, backplane.Taken, error) {
	if err := f.check("Arrive"); err != nil {
		return "", backplane.Taken{}, err
	}
	return f.Backplane.Arrive(ctx, key, target, id, hold)
}

// PutHandoff implements backplane.Backplane.
func (f *Faulty) PutHandoff(ctx context.Context, target, id string, data []byte, ttl time.Duration) error {
	if err := f.check("PutHandoff"); err != nil {
		return err
	}
	return f.Backplane.PutHandoff(ctx, target, id, data, ttl)
}

// TakeHandoff implements backplane.Backplane.
func (f *Faulty) TakeHandoff(ctx context.Context, target, id string, hold time.Duration) (backplane.Taken, error) {
	if err := f.check("TakeHandoff"); err != nil {
		return backplane.Taken{}, err
	}
	return f.Backplane.TakeHandoff(ctx, target, id, hold)
}

// ConfirmHandoff implements backplane.Backplane.
func (f *Faulty) ConfirmHandoff(ctx context.Context, target, id, token string) error {
	if err := f.check("ConfirmHandoff"); err != nil {
		return err
	}
	return f.Backplane.ConfirmHandoff(ctx, target, id, token)
}

// Increment implements backplane.Backplane.
func (f *Faulty) Increment(ctx context.Context, key string, ttl time.Duration, by int64) (int64, error) {
	if err := f.check("Increment"); err != nil {
		return 0, err
	}
	return f.Backplane.Increment(ctx, key, ttl, by)
}

// PutRecord implements backplane.Backplane.
func (f *Faulty) PutRecord(ctx context.Context, collection, id string, data []byte) error {
	if err := f.check("PutRecord"); err != nil {
		return err
	}
	return f.Backplane.PutRecord(ctx, collection, id, data)
}

// Record implements backplane.Backplane.
func (f *Faulty) Record(ctx context.Context, collection, id string) ([]byte, error) {
	if err := f.check("Record"); err != nil {
		return nil, err
	}
	return f.Backplane.Record(ctx, collection, id)
}

// DeleteRecord implements backplane.Backplane.
func (f *Faulty) DeleteRecord(ctx context.Context, collection, id string) error {
	if err := f.check("DeleteRecord"); err != nil {
		return err
	}
	return f.Backplane.DeleteRecord(ctx, collection, id)
}

// Records implements backplane.Backplane.
func (f *Faulty) Records(ctx context.Context, collection string) (map[string][]byte, error) {
	if err := f.check("Records"); err != nil {
		return nil, err
	}
	return f.Backplane.Records(ctx, collection)
}

// Reassert implements backplane.Backplane.
func (f *Faulty) Reassert(ctx context.Context, owner string, lease time.Duration, keys ...backplane.Key) ([]backplane.Key, error) {
	if err := f.check("Reassert"); err != nil {
		return nil, err
	}
	return f.Backplane.Reassert(ctx, owner, lease, keys...)
}
