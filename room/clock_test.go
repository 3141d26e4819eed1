package room

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
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
		c := newSlotClock(new(atomic.Bool))
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
	c := newSlotClock(new(atomic.Bool))
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

// TestTimekeepersLeaveAP: while rooms run, the two workers that keep time
// never hold every P at once. A P held in a system call is one the runtime
// cannot give to a goroutine that network input woke: with both
// timekeepers asleep in nanosleep(2) before nearly every slot, as they
// once were, a busy server noticed its players' messages only when the
// runtime's monitor took a P back, up to 10 ms late. The test samples the
// goroutines the runtime counts as in a system call: without rooms there
// are none, and while rooms run there must be fewer than the Ps.
func TestTimekeepersLeaveAP(t *testing.T) {
	// Not parallel: the count is the whole process's.
	procs := runtime.GOMAXPROCS(0)
	if procs < 2 {
		t.Skip("needs GOMAXPROCS 2 or more, as two workers keep time")
	}
	h := newHost(t, newCounterQuiet(), Config{Rate: 60})
	runHost(t, h)
	for range 100 {
		if _, err := h.OpenRoom(t.Context(), Info{}); err != nil {
			t.Fatal(err)
		}
	}
	// Sample while the rooms step, spread over the slots.
	const samples = 200
	s := []metrics.Sample{{Name: "/sched/goroutines/not-in-go:goroutines"}}
	some, all := 0, 0
	for range samples {
		time.Sleep(250 * time.Microsecond) // spreads the samples; not a wait for a condition
		metrics.Read(s)
		switch n := s[0].Value.Uint64(); {
		case n >= uint64(min(procs, timekeepers)):
			all++
			fallthrough
		case n > 0:
			some++
		}
	}
	t.Logf("goroutines in a system call in %d of %d samples, as many as the timekeepers in %d", some, samples, all)
	if all > samples/10 {
		t.Errorf("both timekeepers were in a system call in %d of %d samples while rooms ran: they hold every P while they wait", all, samples)
	}
}

// A sleep on the high-resolution timer allocates nothing: the timekeepers
// sleep before every slot.
func TestFineTimerSleepAllocatesNothing(t *testing.T) {
	ft := newFineTimer()
	if ft == nil {
		t.Skip("no high-resolution timer on this platform")
	}
	defer ft.close()
	if n := testing.AllocsPerRun(20, func() { ft.sleep(time.Microsecond) }); n != 0 {
		t.Errorf("%v allocations per sleep", n)
	}
}
