package room

import (
	"context"
	"sync/atomic"
	"time"
)

// A slot lasts about a millisecond at 60 Hz, and Go's timers wake up to a
// millisecond late on Linux: the runtime waits for them in epoll, whose
// timeout is in whole milliseconds. So a timekeeping worker sleeps its last
// stretch before a slot on a fineTimer, which the kernel's high-resolution
// timer wakes within tens of microseconds, and which holds neither a thread
// nor a P while it waits.
//
// A goroutine woken from Go's poller is run by whichever thread polled it,
// often on another CPU, and a virtual machine can make such a wake-up late
// by milliseconds. A thread asleep in nanosleep(2) wakes on its own CPU,
// but holds its P the while: with both timekeepers asleep there before
// nearly every slot, no P was left to notice network input, and a server
// answered its players up to 10 ms late. So one timekeeper at a time, the
// first to get there, sleeps the last exactSpan before a slot in
// nanosleep(2), and the other waits on its fineTimer: the slot is cut on
// time by either, and at most one P, for at most exactSpan, is held.
//
// fineSpan is the longest wait slept on the fineTimer; longer waits are
// slept on a timer first, until about fineSpan is left.
const (
	fineSpan  = 3 * time.Millisecond
	exactSpan = 250 * time.Microsecond
)

// slotClock waits for the scheduler's slots.
type slotClock struct {
	timer *time.Timer
	// fine is the high-resolution timer, used while fineOn: the platform
	// has one, it works, and the clock is real. A fake clock
	// (testing/synctest) does not move while a goroutine waits on the
	// kernel's timer, so there the first such sleep turns fineOn off and
	// only timers are used.
	fine   *fineTimer
	fineOn bool
	// exact is set while a timekeeper sleeps its last exactSpan in the
	// kernel; nil where none may (a single P, or no thread sleep).
	exact *atomic.Bool
}

// newSlotClock returns a clock; exact, shared by the timekeepers, lets one
// of them at a time sleep the last stretch in the kernel (nil: none).
func newSlotClock(exact *atomic.Bool) *slotClock {
	t := time.NewTimer(time.Hour)
	t.Stop()
	fine := newFineTimer()
	if fine == nil || threadSleep == nil {
		exact = nil
	}
	return &slotClock{timer: t, fine: fine, fineOn: fine != nil, exact: exact}
}

func (c *slotClock) stop() {
	c.timer.Stop()
	if c.fine != nil {
		c.fine.close()
	}
}

// wait blocks until due or until ctx ends, and reports whether due came.
func (c *slotClock) wait(ctx context.Context, due time.Time) bool {
	for {
		if ctx.Err() != nil {
			return false
		}
		d := time.Until(due)
		if d <= 0 {
			return true
		}
		if c.fineOn && d <= fineSpan {
			before := time.Now()
			ok := true
			switch {
			case c.exact == nil:
				ok = c.fine.sleep(d)
			case d <= exactSpan && c.exact.CompareAndSwap(false, true):
				threadSleep(d)
				c.exact.Store(false)
			case d > exactSpan:
				ok = c.fine.sleep(d - exactSpan) // wake for the last stretch
			default: // the other timekeeper sleeps in the kernel
				ok = c.fine.sleep(d)
			}
			if !ok || time.Now().Equal(before) {
				c.fineOn = false
			}
			continue
		}
		if c.fineOn {
			d -= fineSpan - time.Millisecond // wake with about a span left
		}
		c.timer.Reset(d)
		select {
		case <-ctx.Done():
			c.timer.Stop()
			return false
		case <-c.timer.C:
		}
	}
}
