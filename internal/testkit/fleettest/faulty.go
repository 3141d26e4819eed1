package fleettest

import (
	"context"
	"errors"
	"sync"

	"github.com/muster-gg/muster/backplane"
)

// ErrInjected is the error a Faulty backplane returns for a failed call.
var ErrInjected = errors.New("fleettest: injected backplane failure")

// Faulty wraps a backplane so a test can make calls fail: all of them (a
// server cut off, or killed) or those of named operations ("PutHandoff").
// It also counts the calls made, by operation. It is a
// backplane.RecordSwapper, as the one it wraps must be, so a Faulty hides
// no optional interface. Safe for concurrent use.
type Faulty struct {
	// Backplane is the wrapped backplane, faults included: the methods of
	// Faulty are its methods.
	backplane.Backplane
	swapper backplane.RecordSwapper

	mu    sync.Mutex
	cut   bool
	fail  map[string]error
	drop  map[string]bool
	calls map[string]int
	hold  map[string]*held
}

// held is the gate of an operation's calls that Hold holds.
type held struct {
	open    chan struct{} // closed by the release
	waiting int           // calls waiting at the gate now
}

var _ backplane.RecordSwapper = (*Faulty)(nil)

// NewFaulty wraps bp, which has every optional interface of package
// backplane (as the memory backplane has).
func NewFaulty(bp interface {
	backplane.Backplane
	backplane.RecordSwapper
}) *Faulty {
	f := &Faulty{fail: make(map[string]error), drop: make(map[string]bool), calls: make(map[string]int), hold: make(map[string]*held)}
	f.Backplane = backplane.Wrap(bp, backplane.Hooks{Before: f.before})
	f.swapper = f.Backplane.(backplane.RecordSwapper) // Wrap keeps bp's
	return f
}

// SwapRecords implements backplane.RecordSwapper.
func (f *Faulty) SwapRecords(ctx context.Context, swaps ...backplane.RecordSwap) (bool, error) {
	return f.swapper.SwapRecords(ctx, swaps...)
}

// Calls returns how many calls of the named operation (a method name of
// backplane.Backplane or backplane.RecordSwapper) were made, failed ones
// included.
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
// backplane.Backplane or backplane.RecordSwapper) return err; a nil err
// makes them work again.
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
// reach it again (false). Release and Claim can be dropped; naming
// another panics, as a test built on it would pass without dropping
// anything.
func (f *Faulty) Drop(op string, drop bool) {
	if op != backplane.OpClaim.String() && op != backplane.OpRelease.String() {
		panic("fleettest: Drop of " + op + ": only Claim and Release can be dropped")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drop[op] = drop
}

// Hold makes calls of the named operation wait before they reach the
// store, as calls to a stalled store do, until release is called (or the
// call's context ends). Waiting returns how many calls wait now.
func (f *Faulty) Hold(op string) (waiting func() int, release func()) {
	h := &held{open: make(chan struct{})}
	f.mu.Lock()
	f.hold[op] = h
	f.mu.Unlock()
	waiting = func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return h.waiting
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			f.mu.Lock()
			if f.hold[op] == h {
				delete(f.hold, op)
			}
			f.mu.Unlock()
			close(h.open)
		})
	}
	return waiting, release
}

// before counts a call of op and decides its fate: held until released,
// the injected error, a drop, or through to the store.
func (f *Faulty) before(ctx context.Context, op backplane.Op) error {
	name := op.String()
	f.mu.Lock()
	if h := f.hold[name]; h != nil {
		h.waiting++
		f.mu.Unlock()
		select {
		case <-h.open:
		case <-ctx.Done():
		}
		f.mu.Lock()
		h.waiting--
		if err := ctx.Err(); err != nil {
			f.mu.Unlock()
			return err
		}
	}
	defer f.mu.Unlock()
	f.calls[name]++
	switch {
	case f.cut:
		return ErrInjected
	case f.fail[name] != nil:
		return f.fail[name]
	case f.drop[name] && (op == backplane.OpClaim || op == backplane.OpRelease):
		return backplane.SkipCall
	}
	return nil
}
