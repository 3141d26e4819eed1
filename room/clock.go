package room

import (
	"context"
	"time"
)

// A slot lasts about a millisecond at 60 Hz, and Go's timers wake up to a
// millisecond late on Linux: the runtime waits for them in epoll, whose
// timeout is in whole milliseconds. So a timekeeping worker sleeps its last
// stretch before a slot in the kernel's high-resolution sleep, which
// blocks its thread (not a P) and wakes within tens of microseconds.
//
// fineSpan is the longest wait slept that way; longer waits are slept on
// a timer first, until about fineSpan is left.
const fineSpan = 3 * time.Millisecond

// slotClock waits for the scheduler's slots.
type slotClock struct {
	timer *time.Timer
	// fine is whether the thread sleep is used: the platform has one and
	// the clock is real. A fake clock (testing/synctest) does not move
	// while a goroutine sleeps in the kernel, so there the first such
	// sleep turns fine off and only timers are used.
	fine bool
}

func newSlotClock() *slotClock {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &slotClock{timer: t, fine: threadSleep != nil}
}

func (c *slotClock) stop() { c.timer.Stop() }

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
		if c.fine && d <= fineSpan {
			before := time.Now()
			threadSleep(d)
			if time.Now().Equal(before) {
				c.fine = false
			}
			continue
		}
		if c.fine {
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
