//go:build linux

package room

import (
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestSendQueueCountsFramesWaiting: a client that takes its frames as fast
// as they are sent, though its socket stays full (it is behind by the
// socket's buffer), keeps its connection: the send queue counts the
// frames waiting, as the portable path's channel does, not the frames
// sent since the socket last had room for all of them, which the loop
// once counted, and cut such a client after SendQueue frames.
func TestSendQueueCountsFramesWaiting(t *testing.T) {
	fd, peer, sndbuf := socketPair(t)
	c := &Client{msgType: websocket.MessageBinary, send: make(chan []byte, 1), done: make(chan struct{})}
	lc := &loopConn{c: c, fd: fd, maxQueue: 32, ended: make(chan struct{})}
	c.lc.Store(lc)
	t.Cleanup(lc.finish)

	frame := make([]byte, sndbuf/8) // about 9 frames fill what the socket holds
	buf := make([]byte, sndbuf/2)
	sent := 0
	for round := range 40 {
		// Keep a socket's worth waiting past the socket: about 9 frames,
		// well within the send queue.
		for {
			lc.mu.Lock()
			waiting := len(lc.out)
			lc.mu.Unlock()
			if waiting > sndbuf {
				break
			}
			c.sendFrame(frame)
			sent++
			if code, _ := closed(c); code != 0 {
				t.Fatalf("round %d: closed with %d after %d frames, with about %d waiting (send queue %d)",
					round, code, sent, sndbuf/len(frame)+1, lc.maxQueue)
			}
		}
		// The client takes half a socket's worth; the socket has room
		// again (what EPOLLOUT tells the loop).
		if _, err := syscall.Read(peer, buf); err != nil {
			t.Fatal(err)
		}
		lc.writable()
	}
}

// closed returns c's close code and reason; 0 while it is open.
func closed(c *Client) (websocket.StatusCode, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeCode, c.closeReason
}

// TestWriteTimeoutCountsPerFrame: a client that takes a frame a little at
// a time is cut ("write failed") when that frame has waited writeTimeout,
// as the portable path cuts a write that takes longer; the clock starts
// again with each frame it takes whole. The loop once started it again at
// every byte the socket took: a client that took a few bytes every few
// seconds was never cut.
func TestWriteTimeoutCountsPerFrame(t *testing.T) {
	for _, whole := range []bool{false, true} {
		fd, peer, sndbuf := socketPair(t)
		c := &Client{msgType: websocket.MessageBinary, send: make(chan []byte, 1), done: make(chan struct{})}
		lc := &loopConn{c: c, fd: fd, maxQueue: 32, pingAt: time.Now(), ended: make(chan struct{})}
		c.lc.Store(lc)
		t.Cleanup(lc.finish)

		big := make([]byte, 4*sndbuf) // the socket takes a quarter of it at most
		c.sendFrame(big)
		c.sendFrame(big)
		buf := make([]byte, sndbuf/2)
		take := func() {
			if _, err := syscall.Read(peer, buf); err != nil {
				t.Fatal(err)
			}
			lc.writable()
		}
		take()
		// The first frame has waited writeTimeout since it began to wait.
		lc.mu.Lock()
		lc.outSince = time.Now().Add(-writeTimeout)
		lc.mu.Unlock()
		take() // a little more of it
		if whole {
			// The rest of it, not all of the next.
			for frames := 2; frames == 2; {
				take()
				lc.mu.Lock()
				frames = len(lc.ends)
				lc.mu.Unlock()
			}
		}
		lc.sweep(time.Now(), time.Hour, time.Hour)
		code, reason := closed(c)
		switch {
		case !whole && (code != StatusGoingAway || reason != "write failed"):
			t.Fatalf("a frame taken a little at a time for writeTimeout: closed with %d %q, want %d %q",
				code, reason, StatusGoingAway, "write failed")
		case whole && code != 0:
			t.Fatalf("the frame after one taken whole: closed with %d %q, want open", code, reason)
		}
	}
}

// socketPair returns a connected pair of stream sockets, closed when the
// test ends: fd, non-blocking, for a loopConn to write to, the peer to
// read from, and fd's send buffer size.
func socketPair(t *testing.T) (fd, peer, sndbuf int) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fds[1]) })
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	sndbuf, err = syscall.GetsockoptInt(fds[0], syscall.SOL_SOCKET, syscall.SO_SNDBUF)
	if err != nil {
		t.Fatal(err)
	}
	return fds[0], fds[1], sndbuf
}

// TestDrainedFramesCountInTheSendQueue: the frames a Send queued for the
// portable path while the connection came to the loop count in the send
// queue as any other frame does: a client whose socket is full and whose
// queue holds all it may is cut when more come that way (StatusTooSlow,
// or at once when they come before a close frame), not given them on
// top. The loop once drained them past the limit, or dropped them.
func TestDrainedFramesCountInTheSendQueue(t *testing.T) {
	for _, then := range []string{"a send", "a close"} {
		fd, peer, sndbuf := socketPair(t)
		c := &Client{msgType: websocket.MessageBinary, send: make(chan []byte, 4), done: make(chan struct{})}
		lc := &loopConn{c: c, fd: fd, maxQueue: 4, ended: make(chan struct{})}
		c.lc.Store(lc)
		t.Cleanup(lc.finish)

		// Fill the socket, then the send queue: the frame being written
		// and maxQueue behind it.
		frame := make([]byte, sndbuf/4)
		for {
			lc.mu.Lock()
			full := len(lc.ends) == lc.maxQueue+1
			lc.mu.Unlock()
			if full {
				break
			}
			c.sendFrame(frame)
			if code, _ := closed(c); code != 0 {
				t.Fatalf("%s: closed with %d while the send queue filled", then, code)
			}
		}
		// Frames sent to the portable queue during the hand-over.
		c.send <- frame
		c.send <- frame
		switch then {
		case "a send":
			lc.flushQueued()
			if code, _ := closed(c); code != StatusTooSlow {
				t.Fatalf("%s: closed with %d, want %d", then, code, StatusTooSlow)
			}
		case "a close":
			c.Close(StatusGoingAway, "server stopping")
			if !shut(t, peer) {
				t.Fatalf("%s: the connection is not cut", then)
			}
		}
	}
}

// shut reports whether peer's socket pair was shut: peer reads what
// waits in it, then the end of the stream.
func shut(t *testing.T, peer int) bool {
	t.Helper()
	if err := syscall.SetNonblock(peer, true); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(peer, buf)
		switch {
		case n == 0:
			return true
		case err == syscall.EAGAIN:
			return false
		case err != nil:
			t.Fatal(err)
		}
	}
}
