package hosttest

import (
	"context"
	"testing"
	"time"
)

// GoRun runs fn on a goroutine until the test ends: the test's cleanup
// cancels fn's context, waits for fn to return and reports its error.
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

// WaitFor polls cond until it holds, for at most 10 s, and fails the
// test if it does not.
func WaitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
