package room

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// Under a fake clock the thread sleep cannot be used (the clock does not
// move while a goroutine sleeps in the kernel): the first one turns it
// off, and the slots are waited for on timers, exactly.
func TestSlotClockFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newSlotClock()
		defer c.stop()
		start := time.Now()
		for i := 1; i <= 3; i++ {
			due := start.Add(time.Duration(i) * time.Millisecond)
			if !c.wait(t.Context(), due) {
				t.Fatal("wait ended early")
			}
			if got := time.Since(start); got != time.Duration(i)*time.Millisecond {
				t.Fatalf("slot %d came at +%v", i, got)
			}
		}
		if c.fine {
			t.Error("the thread sleep is still on under a fake clock")
		}
		long := start.Add(time.Hour)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		if c.wait(ctx, long) {
			t.Error("wait reports its slot after its context ended")
		}
	})
}

// With the real clock the thread sleep stays on, and no slot comes early.
func TestSlotClockRealClock(t *testing.T) {
	c := newSlotClock()
	defer c.stop()
	want := threadSleep != nil
	for _, d := range []time.Duration{200 * time.Microsecond, time.Millisecond, 5 * time.Millisecond} {
		due := time.Now().Add(d)
		if !c.wait(t.Context(), due) {
			t.Fatal("wait ended early")
		}
		if time.Now().Before(due) {
			t.Fatalf("a %v wait returned before its slot", d)
		}
	}
	if c.fine != want {
		t.Errorf("thread sleep on = %v, want %v", c.fine, want)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if c.wait(ctx, time.Now().Add(time.Hour)) {
		t.Error("wait reports its slot after its context ended")
	}
}
