//go:build linux && (amd64 || arm64)

package relay

import (
	"runtime"
	"sync"
)

// Lent Ps. A loop that waits in the kernel keeps its P while it waits, in
// the system call state, as nginx's worker keeps its thread; the runtime's
// monitor takes such a P back only after a while, which can be
// milliseconds. So that the rest of the process (a game server's rooms and
// players) keeps every P it had, the loop waits in the kernel only on a P
// added for it: GOMAXPROCS is raised by one while it waits there, and
// lowered again when it stops. A process with one P lends none, and a
// process lends at most one P for every two it had, as many as one
// Relay's loops; a loop that gets none waits in Go's poller, and asks
// again a second later. If something else sets GOMAXPROCS meanwhile, the
// loops that wait in the kernel go back to Go's poller at their next
// wake-up, no P is lent until every lent one is back (then on top of the
// new value), and the value set is left alone. (GOMAXPROCS(0) counts the
// lent Ps: a program that saves it while one is lent and sets it back
// later keeps that P.)
var lent struct {
	mu  sync.Mutex
	n   int // Ps lent
	set int // GOMAXPROCS as last set here
	off bool
}

// lendP adds a P for a loop that waits in the kernel, and reports whether
// it did.
func lendP() bool {
	lent.mu.Lock()
	defer lent.mu.Unlock()
	cur := runtime.GOMAXPROCS(0)
	if lent.n > 0 && cur != lent.set {
		lent.off = true
	}
	base := cur - lent.n // the process's own Ps (cur is lent.set while lending)
	if lent.off || base < 2 || lent.n >= (base+1)/2 {
		return false
	}
	if prev := runtime.GOMAXPROCS(cur + 1); prev != cur {
		// Set by someone else since cur was read: put theirs back.
		runtime.GOMAXPROCS(prev)
		lent.off = true
		return false
	}
	lent.n++
	lent.set = cur + 1
	return true
}

// stillLent reports whether GOMAXPROCS is still as lendP and returnP left
// it, that is, whether a loop's lent P is still an added one.
func stillLent() bool {
	lent.mu.Lock()
	defer lent.mu.Unlock()
	if !lent.off && runtime.GOMAXPROCS(0) != lent.set {
		lent.off = true
	}
	return !lent.off
}

// returnP takes back a P that lendP added.
func returnP() {
	lent.mu.Lock()
	defer lent.mu.Unlock()
	lent.n--
	if cur := runtime.GOMAXPROCS(0); cur != lent.set {
		lent.off = true
	} else if !lent.off {
		if prev := runtime.GOMAXPROCS(cur - 1); prev != cur {
			runtime.GOMAXPROCS(prev) // set by someone else meanwhile
			lent.off = true
		} else {
			lent.set = cur - 1
		}
	}
	if lent.n == 0 {
		lent.off = false
	}
}

// procs is GOMAXPROCS without the Ps lent to loops.
func procs() int {
	lent.mu.Lock()
	defer lent.mu.Unlock()
	return runtime.GOMAXPROCS(0) - lent.n
}
