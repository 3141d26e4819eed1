package testrun

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A Running stops when told, returns fn's error to every Stop, and tells
// whether fn has ended without waiting for it.
func TestRunning(t *testing.T) {
	errStopped := errors.New("stopped")
	r := Start(t, func(ctx context.Context) error {
		<-ctx.Done()
		return errStopped
	})
	if ended, _ := r.Ended(); ended {
		t.Fatal("ended before Stop")
	}
	if err := r.Stop(); !errors.Is(err, errStopped) {
		t.Fatalf("Stop = %v", err)
	}
	if ended, err := r.Ended(); !ended || !errors.Is(err, errStopped) {
		t.Fatalf("after Stop: Ended = %v, %v", ended, err)
	}
	if err := r.Stop(); !errors.Is(err, errStopped) {
		t.Fatalf("second Stop = %v", err)
	}
	if err := Start(t, func(context.Context) error { return nil }).Wait(); err != nil {
		t.Fatalf("Wait = %v", err)
	}
}

// A Clock moves only when told; Poll reports whether its condition came
// to hold in time.
func TestPollAndClock(t *testing.T) {
	c := NewClock(time.Unix(0, 0))
	if Poll(20*time.Millisecond, func() bool { return c.Now().After(time.Unix(0, 0)) }) {
		t.Fatal("a clock that stands still moved")
	}
	c.Advance(time.Minute)
	if got := c.Now(); !got.Equal(time.Unix(60, 0)) {
		t.Fatalf("Now after Advance(1m) = %v", got)
	}
	if !Poll(time.Second, func() bool { return true }) {
		t.Fatal("Poll of a condition that holds reported false")
	}
}
