package testrun

import (
	"context"
	"testing"
	"time"
)

// GoRun runs fn on a goroutine until the test ends: the test's cleanup
// cancels fn's context, waits for fn to return and reports its error. In
// a testing/synctest bubble the goroutine is the bubble's.
func GoRun(tb testing.TB, fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
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
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting until %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
