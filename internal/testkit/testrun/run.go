package testrun

import (
	"context"
	"testing"
	"time"
)

// Running is a function running on a goroutine of its own, from Start.
type Running struct {
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	err    error // fn's, once done is closed
}

// Start runs fn on a goroutine of its own until Stop, or until the test
// ends. In a testing/synctest bubble the goroutine is the bubble's.
func Start(tb testing.TB, fn func(context.Context) error) *Running {
	r := &Running{done: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	go func() {
		defer close(r.done)
		r.err = fn(r.ctx)
	}()
	tb.Cleanup(func() { r.Stop() })
	return r
}

// Context returns fn's context, which Stop cancels.
func (r *Running) Context() context.Context { return r.ctx }

// Stop cancels fn's context, waits for fn to return and returns its
// error. It may be called again, and returns the same error.
func (r *Running) Stop() error {
	r.cancel()
	<-r.done
	return r.err
}

// End is Stop for the test's goroutine: it fails the test if fn returns
// an error.
func (r *Running) End(tb testing.TB) {
	tb.Helper()
	if err := r.Stop(); err != nil {
		tb.Fatal(err)
	}
}

// Wait waits for fn to return by itself and returns its error.
func (r *Running) Wait() error {
	<-r.done
	return r.err
}

// Ended reports whether fn has returned (by itself, or stopped), and its
// error if so.
func (r *Running) Ended() (bool, error) {
	select {
	case <-r.done:
		return true, r.err
	default:
		return false, nil
	}
}

// GoRun runs fn on a goroutine of its own until the test ends; then it
// stops fn and fails the test if fn returns an error.
func GoRun(tb testing.TB, fn func(context.Context) error) {
	r := Start(tb, fn)
	tb.Cleanup(func() {
		if err := r.Stop(); err != nil {
			tb.Error(err)
		}
	})
}

// Within is how long WaitFor waits.
const Within = 10 * time.Second

// WaitFor polls cond until it holds, for at most Within, and fails the
// test if it does not.
func WaitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	WaitWithin(tb, Within, what, cond)
}

// WaitWithin is WaitFor with another bound, for what takes longer
// (processes starting, a store failing over).
func WaitWithin(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Poll(within, cond) {
		tb.Fatalf("timed out after %v waiting until %s", within, what)
	}
}

// Poll polls cond until it holds, for at most within, and reports
// whether it did. It does not fail the test, so it may run on any
// goroutine.
func Poll(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}
