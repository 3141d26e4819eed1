//go:build linux

package room

import (
	"encoding/binary"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/coder/websocket"
	"github.com/muster-gg/muster/internal/wsframe"
)

// loopConn is a player's connection on the event loop (loop_linux.go).
type loopConn struct {
	l    *sockLoop
	c    *Client
	fd   int
	recv func(lc *loopConn, c *Client, frame []byte) bool // a whole message; false when it closed the client

	// The loop goroutine's only.
	r       wsReader
	initial []byte // what the client sent past its hello, read first
	hup     bool   // the client's end of stream came with an event: read until it is found
	again   bool   // in the loop's again list
	gone    bool   // the loop forgot it
	halted  bool   // reads stopped: what comes is dropped until the end
	limit   bucket // the client's messages (Limits.Messages)

	mu       sync.Mutex
	out      []byte    // written to the socket, not yet taken by it
	outSince time.Time // when out's first frame began to wait for room in the socket; zero while none waits
	waiting  bool      // the socket had no room: the next EPOLLOUT writes out
	ends     []int     // where each frame in out ends: the frames waiting
	maxQueue int       // the most frames that may wait (Config.SendQueue)
	closing  bool      // our close frame is queued: no more frames
	last     bool      // the close frame queued is the last of the connection: it ends once the socket took it
	closeAt  time.Time
	closed   bool // the loop closed fd
	pingAt   time.Time
	pingOut  bool   // a ping not yet answered
	pingSeq  uint64 // the last ping's payload: its pong echoes it

	// Messages for the session goroutine (loopinbox_linux.go), in order.
	wmu        sync.Mutex
	inbox      []queuedMessage
	inboxBytes int           // the bodies' bytes in inbox
	maxInbox   int           // past as many bytes in inbox, reads pause
	paused     bool          // reads wait for the session goroutine to take inbox
	working    bool          // the session goroutine has messages: the next ones queue behind them
	kick       chan struct{} // wakes the session goroutine
	ended      chan struct{} // closed when the loop closed fd
}

// read serves lc's socket after an event, or again (sockLoop.again): it
// feeds the frame reader what the client sent past its hello, if it has
// not yet, then what one read of the socket gives. more says the socket
// may hold more (the read filled buf, or the client's end of stream came
// and is not yet read): the loop reads it again once it has served the
// other sockets ready, so that a client that keeps its socket full does
// not keep the loop to itself. alive is false when the connection ended
// (end of stream, a read error, a close handshake done).
//
// While the session goroutine has more than maxInbox bytes of messages to
// handle, it reads nothing: what the client sends waits in the socket,
// and its writes wait, as on the portable path, whose reader waits for
// the module. The session goroutine re-arms the socket when it takes them
// (loopConn.resume).
func (lc *loopConn) read(buf []byte) (alive, more bool) {
	if b := lc.initial; b != nil {
		lc.initial = nil
		if !lc.feed(b) {
			return false, false
		}
	}
	if lc.isPaused() {
		return true, false
	}
	for {
		n, errno := readFD(lc.fd, buf)
		switch {
		case n > 0:
			if !lc.feed(buf[:n]) {
				return false, false
			}
			// A short read found the socket empty: what comes next is a
			// new event (edge-triggered epoll signals every arrival), so
			// the read that would find it so is saved.
			return true, n == len(buf) || lc.hup
		case errno == syscall.EAGAIN:
			return true, false
		case errno == syscall.EINTR:
		case n == 0 && errno == 0 && lc.lingers():
			// The client ended its side of the stream after its close
			// frame; it may still read the echo, which waits for room:
			// the connection ends once it is written (or cut).
			return true, false
		default:
			return false, false // end of stream, or an error
		}
	}
}

// readFD reads from fd without the scheduler's system call state: the
// socket never blocks.
func readFD(fd int, b []byte) (int, syscall.Errno) {
	r, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(r), errno
}

// feed parses what the client sent; false when the connection is over.
func (lc *loopConn) feed(b []byte) bool {
	if lc.halted {
		return true // dropped: the end comes from the client or the sweep
	}
	over := false
	err := lc.r.feed(b, func(op byte, pl []byte) bool {
		switch op {
		case wsframe.OpPing:
			lc.write(wsframe.OpPong, pl)
		case wsframe.OpPong:
			// Only the pong of the last ping answers it, as on the
			// portable path: a client cannot answer pings it never read.
			lc.mu.Lock()
			if len(pl) == 8 && binary.BigEndian.Uint64(pl) == lc.pingSeq {
				lc.pingOut = false
			}
			lc.mu.Unlock()
		case wsframe.OpClose:
			// Nothing after the close is read; the connection ends now,
			// or once what waits for the client is written.
			over = lc.closeReceived(pl)
			lc.halted = true
			return false
		case opTooBig:
			// Read on: the client's answer to the close ends it.
			lc.c.Close(websocket.StatusMessageTooBig, "frame too big")
		default:
			lc.mu.Lock()
			closing := lc.closing
			lc.mu.Unlock()
			if closing {
				return true // the close handshake is under way: data is dropped
			}
			// A message that closed the client (recv returned false) is
			// the last: the close frame went out, and what follows is
			// dropped above until the client's answer.
			lc.recv(lc, lc.c, pl)
		}
		return true
	})
	if err == errWSProtocol {
		lc.halted = true
		lc.c.Close(websocket.StatusProtocolError, "protocol error")
	}
	return !over
}

// closeReceived answers the client's close frame with its code, as the
// portable path does, unless the close was ours; a close frame that
// breaks RFC 6455 (a payload of one byte, a code not for the wire) is
// answered with 1002. It reports whether the socket took all that was
// queued for the client, the answer too: the connection may end now.
// Else what waits is written as the socket has room, as the portable
// path's writer waits for it, bounded as any frame is (sweep), and the
// socket is shut once it took the last (flushLocked).
func (lc *loopConn) closeReceived(pl []byte) (done bool) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.closed {
		return true
	}
	if !lc.closing {
		lc.closing, lc.closeAt = true, time.Now()
		code := pl
		switch {
		case len(pl) == 0:
		case len(pl) == 1 || !wireCloseCode(binary.BigEndian.Uint16(pl)):
			code = closePayload(uint16(websocket.StatusProtocolError), "protocol error")
		default:
			code = pl[:2]
		}
		lc.appendLocked(wsframe.OpClose, code)
		lc.flushLocked()
	}
	if len(lc.out) == 0 {
		return true
	}
	lc.last = true
	return false
}

// lingers reports whether the connection waits for the socket to take
// its last frames before it ends (closeReceived).
func (lc *loopConn) lingers() bool {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.last && len(lc.out) > 0
}

// write sends one frame of op with payload: at once if the socket takes
// it, else after what already waits. A client with more than its send
// queue waiting is cut (StatusTooSlow).
func (lc *loopConn) write(op byte, payload []byte) {
	lc.mu.Lock()
	if lc.closing || lc.closed {
		lc.mu.Unlock()
		return
	}
	slow := lc.drainLocked() || lc.appendLocked(op, payload)
	if !slow {
		lc.flushLocked()
	}
	lc.mu.Unlock()
	if slow {
		lc.tooSlow()
	}
}

// tooSlow cuts a client over its send queue.
func (lc *loopConn) tooSlow() { lc.c.Close(StatusTooSlow, "client too slow") }

// drainLocked queues, first, the frames sent to the client's portable
// queue by a Send that ran while the connection came to the loop. They
// count in the send queue as any other frame: true when one does not fit
// (the client is too slow; the rest are left).
func (lc *loopConn) drainLocked() bool {
	for len(lc.c.send) > 0 {
		select {
		case frame := <-lc.c.send:
			if lc.appendLocked(lc.c.opcode(), frame) {
				return true
			}
		default:
			return false
		}
	}
	return false
}

// appendLocked appends a frame to out; true, and the frame left out,
// when the client is over its send queue: more than maxQueue frames wait
// behind the one being written, as the portable path's channel holds
// maxQueue behind the writer's. Pings and pongs count as the other frames
// do (a client that floods pings and reads nothing would otherwise grow
// out without end); the close frame is never left out.
func (lc *loopConn) appendLocked(op byte, payload []byte) bool {
	if len(lc.ends) > lc.maxQueue && op != wsframe.OpClose {
		return true
	}
	if lc.out == nil {
		lc.out = make([]byte, 0, min(len(payload)+10, 512))
	}
	lc.out = appendFrame(lc.out, op, payload)
	lc.ends = append(lc.ends, len(lc.out))
	return false
}

// wroteLocked forgets the first n bytes of out, written, and the frames
// they ended; the write timeout starts again for the next frame.
func (lc *loopConn) wroteLocked(n int) {
	lc.out = lc.out[:copy(lc.out, lc.out[n:])]
	i := 0
	for i < len(lc.ends) && lc.ends[i] <= n {
		i++
	}
	if i > 0 {
		lc.outSince = time.Time{}
	}
	lc.ends = lc.ends[:copy(lc.ends, lc.ends[i:])]
	for j := range lc.ends {
		lc.ends[j] -= n
	}
}

// flushLocked writes out unless the socket is full; what it does not take
// waits for EPOLLOUT.
func (lc *loopConn) flushLocked() {
	if lc.waiting || lc.closed || len(lc.out) == 0 {
		return
	}
	for len(lc.out) > 0 {
		r, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(lc.fd), uintptr(unsafe.Pointer(&lc.out[0])), uintptr(len(lc.out)))
		switch errno {
		case 0:
			lc.wroteLocked(int(r))
		case syscall.EINTR:
		case syscall.EAGAIN:
			// The write timeout counts from here, for the frame first in
			// out, as the portable path's counts for each write: a client
			// that does not take it whole within writeTimeout, however
			// little at a time it takes, is cut by the sweep.
			lc.waiting = true
			if lc.outSince.IsZero() {
				lc.outSince = time.Now()
			}
			return
		default:
			// The client is gone: the loop reads its end.
			lc.cutLocked()
			return
		}
	}
	if cap(lc.out) > keptReadBuffer {
		lc.out = nil
	}
	if lc.last {
		// The socket took the last frame: it sends it, then the end of
		// the stream, and the loop reads the end.
		lc.cutLocked()
	}
}

// cutLocked shuts the socket both ways: what waits in out is dropped, as
// nothing more is written, and the loop reads the end.
func (lc *loopConn) cutLocked() {
	lc.out, lc.ends = lc.out[:0], lc.ends[:0]
	_ = syscall.Shutdown(lc.fd, syscall.SHUT_RDWR)
}

// flushQueued writes what a Send queued for the portable path while the
// connection came to the loop.
func (lc *loopConn) flushQueued() {
	lc.mu.Lock()
	slow := lc.drainLocked()
	lc.flushLocked()
	lc.mu.Unlock()
	if slow {
		lc.tooSlow()
	}
}

// writable writes what waited for room in the socket.
func (lc *loopConn) writable() {
	lc.mu.Lock()
	lc.waiting = false
	lc.flushLocked()
	lc.mu.Unlock()
}

// close sends the close frame with code and reason after the frames
// already sent; the loop closes the socket when the client answers, the
// sweep after the loop's wait if it does not. StatusTooSlow cuts it at once.
// StatusProtocolError fails the connection (RFC 6455 section 7.1.7): a
// client that broke the protocol cannot be trusted to answer, so the
// socket is shut once it has taken the close frame, as the portable path
// cuts the connection once coder/websocket has written it.
func (lc *loopConn) close(code websocket.StatusCode, reason string) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.closed {
		return
	}
	if code == StatusTooSlow {
		lc.closing = true
		lc.cutLocked()
		return
	}
	if lc.closing {
		return
	}
	if lc.drainLocked() {
		// Too slow for the frames queued before the close: cut, as
		// StatusTooSlow is.
		lc.closing = true
		lc.cutLocked()
		return
	}
	lc.closing, lc.closeAt = true, time.Now()
	lc.last = code == websocket.StatusProtocolError
	lc.appendLocked(wsframe.OpClose, closePayload(uint16(code), reason))
	lc.flushLocked()
}

// cut ends the connection without a close frame.
func (lc *loopConn) cut() {
	lc.mu.Lock()
	if !lc.closed {
		lc.cutLocked()
	}
	lc.mu.Unlock()
}

// sweep pings the client when one is due, and cuts it when it did not
// answer the last ping, take a frame within writeTimeout (the close frame
// too), or answer the close frame within closeWait.
func (lc *loopConn) sweep(now time.Time, ping, closeWait time.Duration) {
	lc.mu.Lock()
	if lc.closed {
		lc.mu.Unlock()
		return
	}
	if !lc.closing {
		if lc.drainLocked() {
			lc.mu.Unlock()
			lc.tooSlow()
			return
		}
		lc.flushLocked()
	}
	var why string
	slow := false
	switch {
	case lc.closing:
		// The close frame, and the frames before it, are bounded by the
		// write timeout too, as the portable path's writes are.
		if now.Sub(lc.closeAt) >= closeWait || len(lc.out) > 0 && now.Sub(lc.outSince) >= writeTimeout {
			lc.cutLocked()
		}
	case len(lc.out) > 0 && now.Sub(lc.outSince) >= writeTimeout:
		lc.cutLocked()
		why = "write failed"
	case now.Sub(lc.pingAt) < ping:
	case lc.pingOut:
		why = "no answer to ping"
	default:
		lc.pingOut, lc.pingAt = true, now
		lc.pingSeq++
		if lc.appendLocked(wsframe.OpPing, binary.BigEndian.AppendUint64(make([]byte, 0, 8), lc.pingSeq)) {
			slow = true
		} else {
			lc.flushLocked()
		}
	}
	lc.mu.Unlock()
	switch {
	case slow:
		lc.tooSlow()
	case why != "":
		lc.c.Close(StatusGoingAway, why)
	}
}

// finish closes the socket: the loop has forgotten it.
func (lc *loopConn) finish() {
	lc.mu.Lock()
	if !lc.closed {
		lc.closed = true
		_ = syscall.Close(lc.fd)
		lc.out, lc.ends = nil, nil
	}
	lc.mu.Unlock()
	close(lc.ended)
}
