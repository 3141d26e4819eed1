package room

import (
	"context"
	"time"
)

// A slot lasts about a millisecond at 60 Hz, and Go's timers wake up to a
// millisecond late on Linux: the runtime waits for them in epoll, whose
// timeout is in whole milliseconds. So a timekeeping worker sleeps its last
// stretch before a slot on a fineTimer, which the kernel's high-resolution
// timer wakes within tens of microseconds, and which holds neither a thread
// nor a P while it waits.
//
// fineSpan is the longest wait slept that way; longer waits are slept on
// a timer first, until about fineSpan is left.
const fineSpan = 3 * time.Millisecond

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
}

func newSlotClock() *slotClock {
	t := time.NewTimer(time.Hour)
	t.Stop()
	fine := newFineTimer()
	return &slotClock{timer: t, fine: fine, fineOn: fine != nil}
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
			if !c.fine.sleep(d) || time.Now().Equal(before) {
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
