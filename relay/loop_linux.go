//go:build linux && (amd64 || arm64)

package relay

import (
	"net"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/muster-gg/muster/internal/epoll"
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
	fa, ok := epoll.DupConn(a.src.conn)
	if !ok {
		s.mu.Unlock()
		return
	}
	fb, ok := epoll.DupConn(b.src.conn)
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

// loopCount is how many loops a Relay runs at most: one for every two Ps,
// so that relaying leaves room for the server's rooms. On two cores, with
// 32 connections in bench/relay, two loops made three times the futex
// calls per message of one (0.046 against 0.011-0.015) and more context
// switches.
func loopCount() int { return (procs() + 1) / 2 }

// start starts a loop in slot; ls.mu is held.
func (ls *loops) start(slot int) (*loop, error) {
	epfd, err := epoll.New()
	if err != nil {
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
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | epoll.ET, Fd: int32(p.src.fd)}
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
