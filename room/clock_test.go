package room

import (
	"context"
	"runtime"
	"runtime/metrics"
	"testing"
	"testing/synctest"
	"time"
)

// Under a fake clock the high-resolution timer cannot be used (the clock
// does not move while a goroutine waits on the kernel's timer): the first
// sleep on it turns it off, and the slots are waited for on timers,
// exactly.
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
		if c.fineOn {
			t.Error("the high-resolution timer is still on under a fake clock")
		}
		long := start.Add(time.Hour)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		if c.wait(ctx, long) {
			t.Error("wait reports its slot after its context ended")
		}
	})
}

// With the real clock the high-resolution timer stays on, and no slot
// comes early.
func TestSlotClockRealClock(t *testing.T) {
	c := newSlotClock()
	defer c.stop()
	want := c.fine != nil
	for _, d := range []time.Duration{200 * time.Microsecond, time.Millisecond, 5 * time.Millisecond} {
		due := time.Now().Add(d)
		if !c.wait(t.Context(), due) {
			t.Fatal("wait ended early")
		}
		if time.Now().Before(due) {
			t.Fatalf("a %v wait returned before its slot", d)
		}
	}
	if c.fineOn != want {
		t.Errorf("high-resolution timer on = %v, want %v", c.fineOn, want)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if c.wait(ctx, time.Now().Add(time.Hour)) {
		t.Error("wait reports its slot after its context ended")
	}
}

// TestTimekeepersHoldNoP: while rooms run, the two workers that keep time
// wait for their slots without holding a P. A P held in a system call is
// one the runtime cannot give to a goroutine that network input woke: with
// both timekeepers asleep in nanosleep(2), as they once were, a busy
// server noticed its players' messages only when the runtime's monitor
// took a P back, up to 10 ms late. The test samples the goroutines the
// runtime counts as in a system call; without rooms there are none, and
// there must be no more while rooms run.
func TestTimekeepersHoldNoP(t *testing.T) {
	// Not parallel: the count is the whole process's.
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS 2 or more, as two workers keep time")
	}
	h, err := New[*csim, int, *cplayer](newCounterQuiet(), Config{Rate: 60}, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	runHost(t, h)
	for range 100 {
		if _, err := h.OpenRoom(t.Context(), Info{}); err != nil {
			t.Fatal(err)
		}
	}
	// Sample while the rooms step: wait for a few ticks of steps between
	// samples, so that the samples spread over the slots.
	const samples = 200
	s := []metrics.Sample{{Name: "/sched/goroutines/not-in-go:goroutines"}}
	inSyscall := 0
	for range samples {
		time.Sleep(250 * time.Microsecond) // spreads the samples; not a wait for a condition
		metrics.Read(s)
		if s[0].Value.Uint64() > 0 {
			inSyscall++
		}
	}
	t.Logf("a goroutine in a system call in %d of %d samples", inSyscall, samples)
	if inSyscall > samples/4 {
		t.Errorf("a goroutine was in a system call in %d of %d samples while rooms ran; the timekeepers hold their Ps while they wait", inSyscall, samples)
	}
}
