//go:build linux && (amd64 || arm64)

package relay

import (
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// The event loop.
//
// Once both handshakes are done, a session's frames are relayed by one
// goroutine per Relay, the loop, which waits on an epoll instance of its
// own, instead of by two goroutines per session, each waiting in Go's
// poller: one wake-up of the loop serves every socket that became readable
// since the last one. The loop reads each and writes what it read on, as
// nginx's workers do.
//
// Where the loop waits depends on the traffic (see loop.run). While each
// wake-up finds one socket ready, as with one busy connection, it waits in
// epoll_pwait itself, like nginx: its thread sleeps as soon as it has
// written, and wakes straight from the kernel. Parking a goroutine in Go's
// poller instead costs, per message, a pass through the scheduler before
// the thread sleeps and two more epoll calls, while the process the loop
// has just written to waits for the CPU. Once wake-ups find several
// sockets ready, the loop waits in Go's poller, holding no thread, where a
// thread that looks for work before it sleeps often finds the loop's next
// events without a sleep. A loop waits in the kernel only on a P added to
// the process for it (see lent), so that the rooms and players of the
// same server keep every P they had; without one it waits in Go's poller.
//
// The loop only relays: it reads, passes whole frames on with writes that
// must not wait, and answers pings. Anything else hands the session back
// to the pumps' goroutines, which carry on from exactly where the loop
// stopped (see pump.run), with deadlines and waits as before:
//   - a write the peer's socket has no room for (the rest is kept in the
//     side's spill and written first);
//   - the end of a source, a read error, or a frame that ends the session
//     (a close frame, a protocol error, a message above the read limit);
//   - session.stop, from another goroutine (Close, a client that did not
//     answer the relay's probe).
//
// Sockets are taken off Go's poller while on the loop: the loop relays on
// a duplicate of each socket's file descriptor and the net.Conn is closed,
// which removes it from Go's poller without closing the socket, so that a
// message does not also wake a thread waiting in Go's poller. Handing back
// wraps the descriptor in a new net.Conn.
//
// The loop runs while it has sessions, and ends when it has none left.

// loops is a Relay's event loops, one for every two Ps at most, each
// started for a session and ended when it has none left. Sessions are
// spread over them in turn.
type loops struct {
	mu    sync.Mutex
	slots []*loop // the running loops; nil where none runs
	next  int     // the slot the next session goes to
	wg    sync.WaitGroup
	// waitIn, for tests, is where every loop waits: waitAuto (the
	// traffic decides), waitKernel or waitPoller. It is set before the
	// first session.
	waitIn int
	// noDup, for tests, makes every loop find no descriptor to spare
	// when it would wait in Go's poller.
	noDup bool
}

// Where loops wait; see loops.waitIn.
const (
	waitAuto = iota
	waitKernel
	waitPoller
)

// loop is one run of the event loop.
type loop struct {
	ls         *loops
	slot       int
	epfd, wake int // the epoll instance, and an eventfd that wakes it

	// Guarded by ls.mu.
	reqs   []loopReq
	exited bool // the loop has ended; it takes no more requests

	// Only the loop's goroutine uses these.
	pumps  map[int32]*pump // by the descriptor they read
	again  []loopTurn      // sources that had more than one turn's worth
	spare  []loopTurn
	events [128]syscall.EpollEvent
	// perWake is the recent number of events per wake-up, a moving
	// average in units of 1/perWakeOne (see account).
	perWake int
	// pollerUntil is when a loop that went to Go's poller from the
	// kernel's wait, or could not have a P lent, may go back.
	pollerUntil time.Time
	// hasP is whether the loop holds a lent P. take returns it when the
	// loop ends, before the loop's slot is free for another.
	hasP bool
}

// loopReq asks the loop to take a session's two pumps, or, with none, to
// hand the session back.
type loopReq struct {
	s     *session
	pumps [2]*pump
}

// loopTurn is a source to read again, and whether its peer's FIN came.
type loopTurn struct {
	p     *pump
	rdhup bool
}

// loopReads is how many reads one source gets in a turn before the loop
// looks at the others.
const loopReads = 8

// epollET is EPOLLET as the uint32 that EpollEvent.Events holds.
const epollET = 1 << 31

// relay puts the session's pumps a and b on the loop, if both its
// connections are TCP, and returns when the loop has handed the session
// back; otherwise it returns at once and nothing changed.
func (ls *loops) relay(s *session, a, b *pump) {
	if s.rl.noLoop {
		return
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	fa, ok := loopFD(a.src.conn)
	if !ok {
		s.mu.Unlock()
		return
	}
	fb, ok := loopFD(b.src.conn)
	if !ok {
		_ = syscall.Close(fa)
		s.mu.Unlock()
		return
	}
	ls.mu.Lock()
	if ls.slots == nil {
		ls.slots = make([]*loop, loopCount())
	}
	slot := ls.next
	ls.next = (ls.next + 1) % len(ls.slots)
	l := ls.slots[slot]
	if l == nil {
		var err error
		if l, err = ls.start(slot); err != nil {
			ls.mu.Unlock()
			_ = syscall.Close(fa)
			_ = syscall.Close(fb)
			s.mu.Unlock()
			return
		}
	}
	// From here the sockets are the loop's: off Go's poller, and their
	// connections closed.
	_ = a.src.conn.Close()
	_ = b.src.conn.Close()
	a.src.onLoop, a.src.fd = true, fa
	b.src.onLoop, b.src.fd = true, fb
	s.loop, s.offLoop = l, make(chan struct{})
	l.reqs = append(l.reqs, loopReq{s: s, pumps: [2]*pump{a, b}})
	l.poke()
	ls.mu.Unlock()
	s.mu.Unlock()
	<-s.offLoop
}

// wait returns when no loop runs; the caller makes sure no session is
// left on one.
func (ls *loops) wait() { ls.wg.Wait() }

// loopFD returns a duplicate of c's descriptor if c is a TCP connection.
func loopFD(c net.Conn) (int, bool) {
	rc := tcpRawConn(c)
	if rc == nil {
		return 0, false
	}
	fd, errno := -1, syscall.Errno(0)
	err := rc.Control(func(s uintptr) {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, s, syscall.F_DUPFD_CLOEXEC, 0)
		fd, errno = int(r), e
	})
	if err != nil || errno != 0 {
		return 0, false
	}
	return fd, true
}

// loopCount is how many loops a Relay runs at most: one for every two Ps,
// so that relaying leaves room for the server's rooms. On two cores, with
// 32 connections in bench/relay, two loops made three times the futex
// calls per message of one (0.046 against 0.011-0.015) and more context
// switches.
func loopCount() int { return (procs() + 1) / 2 }

// start starts a loop in slot; ls.mu is held.
func (ls *loops) start(slot int) (*loop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if err := syscall.SetNonblock(epfd, true); err != nil {
		_ = syscall.Close(epfd)
		return nil, err
	}
	l := &loop{ls: ls, slot: slot, epfd: epfd, wake: -1, pumps: make(map[int32]*pump)}
	wake, _, errno := syscall.RawSyscall(syscall.SYS_EVENTFD2, 0, syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if errno != 0 {
		_ = syscall.Close(epfd)
		return nil, errno
	}
	l.wake = int(wake)
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(wake)}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, l.wake, &ev); err != nil {
		l.close()
		return nil, err
	}
	ls.slots[slot] = l
	ls.wg.Add(1)
	go l.run()
	return l, nil
}

// close closes the loop's epoll instance and eventfd.
func (l *loop) close() {
	_ = syscall.Close(l.epfd)
	_ = syscall.Close(l.wake)
}

// poke wakes the loop; ls.mu is held.
func (l *loop) poke() {
	one := uint64(1)
	_, _, _ = syscall.RawSyscall(syscall.SYS_WRITE, uintptr(l.wake), uintptr(unsafe.Pointer(&one)), 8)
}

// handBack asks the loop to hand s back and returns when it has. It is
// called from any goroutine but the loop's.
func (l *loop) handBack(s *session) {
	l.ls.mu.Lock()
	if !l.exited { // an ended loop has handed back every session
		l.reqs = append(l.reqs, loopReq{s: s})
		l.poke()
	}
	l.ls.mu.Unlock()
	<-s.offLoop
}

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
	f, err := dupFile(l.epfd, "relay-epoll")
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

// dupFile returns an *os.File, on Go's poller, for a duplicate of fd.
func dupFile(fd int, name string) (*os.File, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD_CLOEXEC, 0)
	if errno != 0 {
		return nil, errno
	}
	return os.NewFile(r, name), nil
}

// dispatch reads the sockets of the first n events, then the sources that
// had more than one turn's worth before, and reports whether the eventfd
// was among the events.
func (l *loop) dispatch(n int) (woke bool) {
	for _, ev := range l.events[:n] {
		if int(ev.Fd) == l.wake {
			woke = true
			continue
		}
		if p := l.pumps[ev.Fd]; p != nil {
			l.read(p, ev.Events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0)
		}
	}
	prev := l.again
	l.again = l.spare[:0]
	for _, t := range prev {
		if l.pumps[int32(t.p.src.fd)] == t.p {
			l.read(t.p, t.rdhup)
		}
	}
	clear(prev)
	l.spare = prev[:0]
	return woke
}

// wait returns how many events the epoll instance has ready, or -1 if it
// failed: at once, or, with block, once it has one. Only a wait that can
// block needs the scheduler's system call state.
func (l *loop) wait(block bool) int {
	for {
		var (
			n     uintptr
			errno syscall.Errno
		)
		if block {
			n, _, errno = syscall.Syscall6(syscall.SYS_EPOLL_PWAIT, uintptr(l.epfd),
				uintptr(unsafe.Pointer(&l.events[0])), uintptr(len(l.events)), ^uintptr(0), 0, 0)
		} else {
			n, _, errno = syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(l.epfd),
				uintptr(unsafe.Pointer(&l.events[0])), uintptr(len(l.events)), 0, 0, 0)
		}
		switch errno {
		case 0:
			return int(n)
		case syscall.EINTR:
		default:
			return -1
		}
	}
}

// serve takes the requests, and reports false when the loop has ended
// because it has no session left.
func (l *loop) serve() bool {
	var b [8]byte
	_, _, _ = syscall.RawSyscall(syscall.SYS_READ, uintptr(l.wake), uintptr(unsafe.Pointer(&b[0])), 8)
	for {
		reqs, ended := l.take()
		if ended {
			return false
		}
		if len(reqs) == 0 {
			return true
		}
		for _, q := range reqs {
			if q.pumps[0] == nil {
				l.release(q.s)
			} else {
				l.add(q.s, q.pumps)
			}
		}
	}
}

// take returns the requests made since it last did. When there are none
// and the loop has no session left, it ends the loop (run closes it) and
// reports ended.
func (l *loop) take() (reqs []loopReq, ended bool) {
	l.ls.mu.Lock()
	reqs, l.reqs = l.reqs, nil
	if len(reqs) > 0 || len(l.pumps) > 0 {
		l.ls.mu.Unlock()
		return reqs, false
	}
	l.exited = true
	l.giveBack() // before the slot is free, so a loop started in it can have it
	l.ls.slots[l.slot] = nil
	l.ls.mu.Unlock()
	return nil, true
}

// end hands every session back, taken or asked for, and ends the loop.
func (l *loop) end() {
	for {
		for _, p := range l.pumps {
			l.release(p.s)
		}
		reqs, ended := l.take()
		if ended {
			return
		}
		for _, q := range reqs {
			l.release(q.s)
		}
	}
}

// add takes the session's pumps, and passes on what came with the
// handshakes.
func (l *loop) add(s *session, ps [2]*pump) {
	for _, p := range ps {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | epollET, Fd: int32(p.src.fd)}
		if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, p.src.fd, &ev); err != nil {
			l.release(s)
			return
		}
		l.pumps[int32(p.src.fd)] = p
	}
	for _, p := range ps {
		if !l.passOn(p) {
			return
		}
	}
}

// read reads p's source until it is drained, or for one turn, passing on
// what it reads. A read that does not fill the buffer has drained the
// socket: the poller reports anything that arrives after it as a new
// event, as it is edge-triggered. Except the peer's FIN, which arrives
// without data and is not a new event if it came before the read: when
// the event says it came (rdhup), the loop reads on until the end.
func (l *loop) read(p *pump, rdhup bool) {
	for range loopReads {
		room := len(p.buf) - p.end
		n, errno := recvFrom(uintptr(p.src.fd), p.buf[p.end:])
		switch {
		case errno == syscall.EAGAIN:
			return
		case errno == syscall.EINTR:
			continue
		case errno != 0 || n == 0:
			// The end of the source, or an error: the pump reads it
			// again on its goroutine, and ends as it would have there.
			l.release(p.s)
			return
		}
		p.end += n
		if !l.passOn(p) || n < room && !rdhup {
			return
		}
	}
	l.again = append(l.again, loopTurn{p, rdhup})
}

// recvFrom reads into b (not empty) from the socket fd, which does not
// block.
func recvFrom(fd uintptr, b []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
	return int(n), e
}

// passOn passes on what p has read, and reports false if that handed the
// session back.
func (l *loop) passOn(p *pump) bool {
	if err := p.passOn(); err != nil {
		p.err = err
		l.release(p.s)
		return false
	}
	if len(p.s.client.spill) > 0 || len(p.s.up.spill) > 0 {
		l.release(p.s)
		return false
	}
	return true
}

// release hands s back to its pumps' goroutines, unless it has been
// already: its sockets leave the loop, and each gets a net.Conn again.
func (l *loop) release(s *session) {
	select {
	case <-s.offLoop:
		return
	default:
	}
	for _, d := range [2]*side{s.client, s.up} {
		if l.pumps[int32(d.fd)] != nil {
			delete(l.pumps, int32(d.fd))
			_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, d.fd, nil)
		}
		c, err := fileConn(d.fd)
		d.mu.Lock()
		if err != nil {
			// The socket is closed: the pump that reads it ends at once.
			d.broken = true
			c = closedConn()
		}
		d.setConn(c)
		d.onLoop, d.fd = false, -1
		d.mu.Unlock()
	}
	close(s.offLoop)
}

// fileConn returns a connection on Go's poller for the socket fd, and
// closes fd.
func fileConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "relay")
	defer f.Close()
	return net.FileConn(f)
}

// closedConn returns a connection on which everything fails at once.
func closedConn() net.Conn {
	a, b := net.Pipe()
	_ = a.Close()
	_ = b.Close()
	return a
}

// writeOnLoop writes p to the socket without waiting, on the loop's
// goroutine. What the socket has no room for is kept in the spill, and
// the loop hands the session back, whose pump writes it first.
func (d *side) writeOnLoop(p []byte) error {
	if len(d.spill) > 0 {
		d.spill = append(d.spill, p...)
		return nil
	}
	rest, e := sendAll(uintptr(d.fd), p)
	switch e {
	case 0:
	case syscall.EAGAIN:
		d.spill = append(d.spill, rest...)
	default:
		d.broken = true
		return e
	}
	return nil
}
