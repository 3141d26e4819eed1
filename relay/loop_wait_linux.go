//go:build linux && (amd64 || arm64)

package relay

import (
	"syscall"
	"time"

	"github.com/muster-gg/muster/internal/epoll"
)

// Where the loop waits: in epoll_pwait itself, on a lent P, while the
// traffic is sparse, and in Go's poller once it is dense (see the event
// loop's comment in loop_linux.go).

// run is the loop's goroutine. It waits in the kernel or in Go's poller,
// whichever the traffic favours, and switches when the traffic changes.
func (l *loop) run() {
	defer l.ls.wg.Done()
	defer l.close()
	for kernel := l.inKernel(true); ; {
		var more bool
		forced := l.ls.waitIn == waitKernel // a test's: no P is lent
		if kernel && !forced {
			l.hasP = lendP()
		}
		if kernel && (forced || l.hasP) {
			more = l.waitInKernel(forced)
			l.giveBack()
			l.pollerUntil = time.Now().Add(pollerStay)
			kernel = false
		} else {
			if kernel { // no P to spare
				l.pollerUntil = time.Now().Add(pollerStay)
			}
			more = l.waitInPoller()
			kernel = l.inKernel(false)
		}
		if !more {
			return
		}
	}
}

// pollerStay is how long a loop stays in Go's poller once it has left the
// kernel's wait, or could not have a P lent, before it may go back: each
// switch to the kernel's wait and back is two changes of GOMAXPROCS, each
// of which stops the world.
const pollerStay = time.Second

// giveBack returns the loop's lent P, if it holds one.
func (l *loop) giveBack() {
	if l.hasP {
		l.hasP = false
		returnP()
	}
}

// The loop waits in the kernel while its wake-ups find few sockets ready
// (loop.perWake under perWakeDense), and in Go's poller once they find
// more, until they find fewer than perWakeSparse again, and pollerStay
// has passed. The gap and the stay keep it from switching back and forth:
// each switch changes GOMAXPROCS, which stops the world. With the proxies
// saturated (bench/relay's 32 connections) the average crosses the gap
// back and forth: without the stay a loop switched 160 times in a
// four-round run (counted with a print in a throwaway build), with it 19.
// Traffic that comes one message at a time brings it down to 1 (see
// account).
const (
	perWakeOne    = 16 // one event per wake-up, in loop.perWake's units
	perWakeDense  = 5 * perWakeOne / 2
	perWakeSparse = 5 * perWakeOne / 4
)

// inKernel reports whether the loop is to wait in the kernel, given
// whether it does now.
func (l *loop) inKernel(now bool) bool {
	switch l.ls.waitIn {
	case waitKernel:
		return true
	case waitPoller:
		return false
	}
	if !now && !l.pollerUntil.IsZero() {
		if time.Now().Before(l.pollerUntil) {
			return false
		}
		l.pollerUntil = time.Time{}
	}
	if now {
		return l.perWake < perWakeDense
	}
	return l.perWake < perWakeSparse
}

// turn handles the first n events of a wait (n < 0: the wait failed), and
// reports false when the loop has ended.
func (l *loop) turn(n int) bool {
	if n < 0 {
		l.end() // cannot happen with a valid epoll instance
		return false
	}
	l.account(n)
	woke := l.dispatch(n)
	return !(woke || len(l.pumps) == 0) || l.serve()
}

// account adds a wake-up that found n events to loop.perWake, an
// exponential moving average with a weight of 1/8. The shift rounds down,
// where a division would round toward zero and leave the average stuck
// above perWakeSparse when it comes down (at 23 for one event a wake-up).
func (l *loop) account(n int) {
	if n > 0 {
		l.perWake += (n*perWakeOne - l.perWake) >> 3
	}
}

// waitInKernel waits for events in epoll_pwait itself, as nginx's workers
// do, until the traffic is no longer sparse; it reports false when the
// loop has ended. After its last write the loop's thread goes to sleep at
// once, and wakes straight from the kernel's wait, where parking in Go's
// poller would first pass through the scheduler (an epoll call to look
// for other work, and a look at the other Ps' queues) while the process
// it has just written to waits for the CPU. With one message per wake-up,
// that pass costs about as much as relaying the message.
//
// Meanwhile the loop's P stays in the system call state, as for any
// goroutine blocked in a system call: it is the P lent for the loop, and
// if other goroutines need it, the runtime's monitor hands it to them. If
// something else has set GOMAXPROCS since it was lent, the loop goes back
// to Go's poller after the wake-up that finds it (unless forced, a test's).
func (l *loop) waitInKernel(forced bool) bool {
	for {
		if !l.turn(l.wait(len(l.again) == 0)) {
			return false
		}
		if !l.inKernel(true) {
			return true
		}
		if !forced && !stillLent() {
			return true
		}
	}
}

// waitInPoller waits in Go's poller until the epoll instance has events,
// and takes them without leaving the wait in between, until the traffic
// turns sparse; it reports false when the loop has ended. RawConn.Read
// clears the poller's record of readiness only before its first call of
// the function, so an event that comes while the loop is busy makes the
// next wait return at once, and the loop goes back to waiting without
// polling the instance it has just emptied. With many sockets, a thread
// that parks here looks for other work before it sleeps, and often finds
// the loop's next events then, without a sleep and a wake-up.
//
// The poller has the epoll instance (a duplicate of its descriptor) only
// while the loop waits here: in the kernel's wait, every event would also
// wake the thread that waits in Go's poller.
func (l *loop) waitInPoller() bool {
	ended := false
	f, err := epoll.DupFile(l.epfd, "relay-epoll")
	if l.ls.noDup && err == nil {
		_ = f.Close()
		err = syscall.EMFILE
	}
	if err == nil {
		var rc syscall.RawConn
		if rc, err = f.SyscallConn(); err == nil {
			err = rc.Read(func(uintptr) bool {
				for {
					n := l.wait(false)
					if !l.turn(n) {
						ended = true
						return true
					}
					if l.inKernel(false) {
						return true
					}
					// A wake-up that found one socket ready, or none,
					// waits at once; one that found several looks again
					// first, as more have likely become ready meanwhile,
					// and a look costs less than a wait and a wake-up.
					if n < 2 && len(l.again) == 0 {
						return false
					}
				}
			})
		}
		_ = f.Close()
	}
	if err != nil && !ended {
		// Go's poller cannot have the epoll instance (no descriptor to
		// spare, or it refused it): look, and if nothing is ready, sleep
		// a little on a Go timer, which holds no P, before trying again.
		l.perWake = 0
		n := l.wait(false)
		if n == 0 && len(l.again) == 0 {
			time.Sleep(time.Millisecond)
		}
		return l.turn(n)
	}
	return !ended
}

// wait returns how many events the epoll instance has ready, or -1 if it
// failed: at once, or, with block, once it has one. Only a wait that can
// block needs the scheduler's system call state.
func (l *loop) wait(block bool) int { return epoll.Wait(l.epfd, l.events[:], block) }
