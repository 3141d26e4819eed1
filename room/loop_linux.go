//go:build linux

package room

import (
	"bufio"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/muster-gg/muster/internal/epoll"
)

// The event loop (Config.Sockets "loop", the default on Linux).
//
// After its hello, a player's connection leaves coder/websocket and its
// two goroutines (a reader and a writer, each woken by every frame) for
// an event loop (one for every two Ps; see sockets), a goroutine that
// waits for its share of such sockets on an epoll instance of its own and
// reads each that became readable since its last wake-up, as Node's and
// nginx's event loops do, one read a turn
// (a socket that had more is read again after the others: one client
// sending as fast as it can does not keep the loop to itself):
//   - an input is decoded and queued for its room on the loop itself;
//   - any other message goes to the player's session goroutine, in order
//     (a module may wait for the backplane, which the loop must not); past
//     a bound of them waiting, the loop reads no more of that client until
//     the session goroutine takes them, as the portable path's reader
//     reads nothing while a module works;
//   - frames out are written by whoever sends them, at once, with a write
//     that does not wait (loopConn.write); what the socket has no room for
//     waits in the connection's buffer for the loop's next EPOLLOUT.
//
// The loop waits in Go's poller (a duplicate of its epoll descriptor is an
// *os.File there), so it holds no thread while it waits; while its events
// come fast, it ticks instead, taking every millisecond all that came
// (loop_wait_linux.go). Every sweep
// (sockLoop.every) it pings the players due a ping and cuts those that did
// not answer the last (with its payload), that did not take a frame whole
// within writeTimeout, or did not answer a close within defaultCloseWait. The sockets are taken off Go's poller while on
// the loop: it serves a duplicate of each descriptor, and the net.Conn is
// closed.
//
// The portable path (Config.Sockets "portable", and every connection the
// loop cannot take: TLS, a ping in flight at the hand-over) behaves the
// same to the client; the tests run on both (the muster_portable build
// tag makes it the default).

// defaultCloseWait bounds the wait for a client's answer to a close
// frame.
const defaultCloseWait = 5 * time.Second

// sockets is the host's event loops, one for every two Ps, as the relay
// has: one loop reads for a core at most, and the senders, the step
// workers among them, write on the others. Each is started for its first
// connection; connections go to them in turn; all are stopped when the
// host's connections are gone.
type sockets struct {
	cfg       Config
	closeWait time.Duration // defaultCloseWait; tests change it before the first connection
	rates     [2]float64    // denseRate and sparseRate (loop_wait_linux.go); tests change them likewise
	mu        sync.Mutex
	loops     []*sockLoop // nil where none started yet; tests may set its length first
	next      int         // the slot the next connection goes to
	off       bool        // stopped: takes no more connections
}

// newSockets returns the host's loops, or nil when cfg asks for the
// portable path.
func newSockets(cfg Config) *sockets {
	if cfg.Sockets != SocketsLoop {
		return nil
	}
	return &sockets{cfg: cfg, closeWait: defaultCloseWait, rates: [2]float64{denseRate, sparseRate}, loops: make([]*sockLoop, (runtime.GOMAXPROCS(0)+1)/2)}
}

// sockLoop is one event loop.
type sockLoop struct {
	epfd      int
	f         *os.File // a duplicate of epfd, on Go's poller; nil while the loop ticks (loop_wait_linux.go)
	rc        syscall.RawConn
	every     time.Duration // between two sweeps
	ping      time.Duration
	closeWait time.Duration // for the answer to a close frame
	rates     [2]float64    // events a second at which it starts to tick, and below which it stops
	done      chan struct{} // closed when run returns

	mu       sync.Mutex
	conns    map[int32]*loopConn
	stopped  bool
	switches int // between Go's poller and ticking, for tests

	// The loop goroutine's only.
	next    time.Time // the next sweep
	buf     []byte
	events  [128]syscall.EpollEvent
	list    []*loopConn // sweep's
	ticking bool        // the loop ticks rather than waits in Go's poller
	window  time.Time   // when the count of events in seen began
	seen    int         // events since window
	again   []*loopConn // sockets that may hold more than their last read took
	spare   []*loopConn // again's other backing array
}

// take hands c's connection to the loop and returns it; nil when the
// connection stays on the portable path (s is nil, the connection is not
// plain TCP, the writer would not hand it over, or a system call failed).
// conn and br are what the upgrade hijacked: br holds what the client sent
// past its hello.
func (s *sockets) take(c *Client, conn net.Conn, br *bufio.Reader, recv func(lc *loopConn, c *Client, frame []byte) bool) *loopConn {
	if s == nil || conn == nil || br == nil {
		return nil
	}
	fd, ok := epoll.DupConn(conn)
	if !ok {
		return nil // not plain TCP
	}
	l, err := s.get()
	if err != nil {
		_ = syscall.Close(fd)
		return nil
	}
	if !c.handOver() {
		_ = syscall.Close(fd)
		return nil
	}
	// The writer has stopped: nothing is written or read but here.
	var initial []byte
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		initial = append([]byte(nil), b...)
	}
	// Closing the upgrade's connection takes the socket off Go's poller
	// (the duplicate keeps it open) and, through coder/websocket, drops
	// the finalizer that would keep its buffers a GC cycle or more.
	_ = c.conn.CloseNow()
	lc := &loopConn{
		l: l, c: c, fd: fd, recv: recv,
		r:        wsReader{limit: s.cfg.ReadLimit},
		initial:  initial,
		maxQueue: s.cfg.SendQueue,
		maxInbox: int(max(s.cfg.ReadLimit, 64<<10)),
		pingAt:   time.Now(),
		ended:    make(chan struct{}),
		kick:     make(chan struct{}, 1),
		working:  true, // until the session has placed the player
	}
	c.attach(lc)
	if !l.add(lc) {
		// The loop stopped (so has the host): the connection ends here.
		c.Close(StatusGoingAway, "server stopping")
		lc.finish()
	}
	return lc
}

// get returns the loop the next connection goes to, starting it if it
// does not run yet.
func (s *sockets) get() (*sockLoop, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off {
		return nil, syscall.ESHUTDOWN
	}
	i := s.next % len(s.loops)
	s.next = i + 1
	if s.loops[i] == nil {
		l, err := startLoop(s.cfg.PingInterval, s.closeWait, s.rates)
		if err != nil {
			return nil, err
		}
		s.loops[i] = l
	}
	return s.loops[i], nil
}

// stop stops the loops, once the host's connections are gone, and
// returns when they have ended.
func (s *sockets) stop() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.off = true
	loops := slices.Clone(s.loops)
	s.mu.Unlock()
	for _, l := range loops {
		if l == nil {
			continue
		}
		l.mu.Lock()
		l.stopped = true
		if l.f != nil { // else the loop sees stopped at its next tick
			_ = l.f.SetReadDeadline(time.Unix(1, 0))
		}
		l.mu.Unlock()
	}
	for _, l := range loops {
		if l != nil {
			<-l.done
		}
	}
}

// startLoop starts a loop that pings every ping, waits up to wait for
// the answer to a close frame, and ticks at rates (dense, sparse).
func startLoop(ping, wait time.Duration, rates [2]float64) (*sockLoop, error) {
	epfd, err := epoll.New()
	if err != nil {
		return nil, err
	}
	l := &sockLoop{
		epfd: epfd, ping: ping, closeWait: wait, rates: rates,
		every: min(max(ping/4, 10*time.Millisecond), time.Second),
		done:  make(chan struct{}),
		conns: make(map[int32]*loopConn),
		buf:   make([]byte, 64<<10),
	}
	l.next = time.Now().Add(l.every)
	if !l.intoPoller() {
		_ = syscall.Close(epfd)
		return nil, syscall.EMFILE
	}
	go l.run()
	return l, nil
}

// add registers lc's socket; false if the loop stopped or epoll refused.
func (l *sockLoop) add(lc *loopConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return false
	}
	l.conns[int32(lc.fd)] = lc
	ev := syscall.EpollEvent{Events: loopEvents, Fd: int32(lc.fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, lc.fd, &ev); err != nil {
		delete(l.conns, int32(lc.fd))
		return false
	}
	return true
}

// loopEvents are the events the loop waits for on a socket.
const loopEvents = syscall.EPOLLIN | syscall.EPOLLOUT | syscall.EPOLLRDHUP | epoll.ET

// wait returns how many events are ready, at once, without blocking.
func (l *sockLoop) wait() int { return max(epoll.Wait(l.epfd, l.events[:], false), 0) }

// dispatch serves the n events waiting.
func (l *sockLoop) dispatch(n int) {
	for i := range n {
		ev := l.events[i]
		l.mu.Lock()
		lc := l.conns[ev.Fd]
		l.mu.Unlock()
		if lc == nil {
			continue
		}
		if ev.Events&syscall.EPOLLOUT != 0 {
			lc.writable()
		}
		if ev.Events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
			lc.hup = true
		}
		if ev.Events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 || lc.initial != nil {
			l.serve(lc)
		}
	}
}

// serve reads lc once: it ends it when its connection ended, and puts it
// on the again list when its socket may hold more.
func (l *sockLoop) serve(lc *loopConn) {
	alive, more := lc.read(l.buf)
	switch {
	case !alive:
		l.end(lc)
	case more && !lc.again:
		lc.again = true
		l.again = append(l.again, lc)
	}
}

// readAgain reads once more each socket that may hold more than its last
// read took, in turn, after the events ready: each gets one read a turn.
func (l *sockLoop) readAgain() {
	list := l.again
	l.again = l.spare[:0]
	for _, lc := range list {
		lc.again = false
		if !lc.gone {
			l.serve(lc)
		}
	}
	clear(list)
	l.spare = list[:0]
}

// end forgets lc and closes its socket.
func (l *sockLoop) end(lc *loopConn) {
	lc.gone = true
	l.mu.Lock()
	if l.conns[int32(lc.fd)] == lc {
		delete(l.conns, int32(lc.fd))
	}
	l.mu.Unlock()
	lc.finish()
}
