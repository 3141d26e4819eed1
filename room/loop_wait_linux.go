//go:build linux

package room

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/muster-gg/muster/internal/epoll"
)

// How the event loop waits. While its sockets are quiet it waits in Go's
// poller, and each event wakes it: the loop holds no thread, and an input
// is read as soon as it comes. With many players each wake-up finds one
// event or two, and costs about as much as serving it: Go's poller returns
// (an epoll_pwait), the scheduler runs the loop, which takes the events
// (another) and finds none left (a third) before it parks again. Node's
// loop, five times slower per event, finds ten events a wake-up, and makes
// a tenth of the calls.
//
// So once the events come at more than denseRate a second, the loop ticks:
// it sleeps for tick on a Go timer, then takes all that came meanwhile in
// one call, with its epoll instance out of Go's poller (which would
// otherwise wake for each event, the loop asleep or not). An input then
// waits up to a tick, a millisecond, before it is read: a sixteenth of a
// step at the default rate (60), whose step it still makes unless it came
// within the millisecond before it. Below sparseRate the loop goes back
// to Go's poller; the gap between the two keeps it from switching at
// every window.
const (
	tick       = time.Millisecond
	rateWindow = 100 * time.Millisecond
	denseRate  = 2000 // events a second, at which the loop starts to tick
	sparseRate = 500  // events a second, below which it stops
)

// run waits for events and serves them until stop; then it closes what
// is left.
func (l *sockLoop) run() {
	defer close(l.done)
	for {
		if l.ticking {
			l.tickUntilSweep()
		} else {
			l.pollUntilSweep()
		}
		l.mu.Lock()
		if l.stopped {
			l.mu.Unlock()
			break
		}
		now := time.Now()
		due := !now.Before(l.next)
		if due {
			l.next = now.Add(l.every)
			if l.f != nil {
				_ = l.f.SetReadDeadline(l.next)
			}
			for _, lc := range l.conns {
				l.list = append(l.list, lc)
			}
		}
		l.mu.Unlock()
		for _, lc := range l.list {
			lc.sweep(now, l.ping, l.closeWait)
		}
		clear(l.list)
		l.list = l.list[:0]
	}
	l.mu.Lock()
	for _, lc := range l.conns {
		l.list = append(l.list, lc)
	}
	f := l.f
	l.f = nil
	l.mu.Unlock()
	for _, lc := range l.list {
		l.end(lc)
	}
	if f != nil {
		_ = f.Close()
	}
	_ = syscall.Close(l.epfd)
}

// pollUntilSweep waits in Go's poller and serves what comes until a sweep
// is due, the loop is stopped, or the events come fast enough to tick.
func (l *sockLoop) pollUntilSweep() {
	if !l.intoPoller() {
		l.ticking = true // no descriptor to spare: tick instead, which needs none
		return
	}
	err := l.rc.Read(func(uintptr) bool {
		for {
			n, now := l.turn()
			if l.account(n, now) {
				return true // dense: tick
			}
			if !now.Before(l.next) {
				return true // a sweep is due
			}
			if n < len(l.events) && len(l.again) == 0 {
				// Wait in Go's poller: an event that came while the
				// loop served the others makes the wait return at once.
				return false
			}
		}
	})
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		time.Sleep(time.Millisecond) // cannot happen: not a busy loop if it does
	}
	if l.ticking {
		l.outOfPoller()
	}
}

// tickUntilSweep takes the events ready every tick, until a sweep is due,
// the loop is stopped, or the events come too seldom to tick.
func (l *sockLoop) tickUntilSweep() {
	for {
		n, now := l.turn()
		if l.account(n, now) || !now.Before(l.next) || l.isStopped() {
			return
		}
		if n < len(l.events) && len(l.again) == 0 {
			time.Sleep(tick)
		}
	}
}

// turn serves the events ready and the sockets to read again, and
// returns how many events there were, and when it ended.
func (l *sockLoop) turn() (int, time.Time) {
	n := l.wait()
	if n > 0 {
		l.dispatch(n)
	}
	l.readAgain()
	return n, time.Now()
}

// account counts n events that came by now, and reports whether the loop
// is to switch between Go's poller and ticking, having switched
// l.ticking: it weighs the rate of events over each rateWindow.
func (l *sockLoop) account(n int, now time.Time) bool {
	l.seen += n
	d := now.Sub(l.window)
	if d < rateWindow {
		return false
	}
	rate := float64(l.seen) / d.Seconds()
	l.window, l.seen = now, 0
	if l.ticking && rate >= l.rates[1] || !l.ticking && rate < l.rates[0] {
		return false
	}
	l.ticking = !l.ticking
	l.mu.Lock()
	l.switches++
	l.mu.Unlock()
	return true
}

// intoPoller puts a duplicate of the epoll instance on Go's poller, if it
// is not there, with the sweep's deadline; false if it cannot.
func (l *sockLoop) intoPoller() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		return true
	}
	if l.stopped {
		return false
	}
	f, err := epoll.DupFile(l.epfd, "room-epoll")
	if err != nil {
		return false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return false
	}
	_ = f.SetReadDeadline(l.next)
	l.f, l.rc = f, rc
	return true
}

// outOfPoller takes the epoll instance off Go's poller.
func (l *sockLoop) outOfPoller() {
	l.mu.Lock()
	f := l.f
	l.f, l.rc = nil, nil
	l.mu.Unlock()
	if f != nil {
		_ = f.Close()
	}
}

// isStopped reports whether stop has been called.
func (l *sockLoop) isStopped() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stopped
}
