//go:build linux

package room

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/internal/wsframe"
)

// TestCloseEchoWaitsForRoom: a client that closes first while frames wait
// for room in its socket gets them, then the echo of its close, then the
// end of the stream, as on the portable path, whose writer waits for the
// socket to take the echo; so does one that ended its side of the stream
// after its close frame, as it may still read. The loop once closed the
// socket at once: the frames waiting and the echo were dropped.
func TestCloseEchoWaitsForRoom(t *testing.T) {
	for _, halfClosed := range []bool{false, true} {
		h := newHost(t, newCounter(), Config{Sockets: SocketsLoop})
		runHost(t, h)
		srv := newServer(t, h)
		// The client's receive buffer is small and fixed: with the
		// server's send buffer at its largest, it bounds what the
		// sockets hold.
		const rcvbuf = 64 << 10
		d := &net.Dialer{Control: func(_, _ string, raw syscall.RawConn) error {
			return raw.Control(func(fd uintptr) {
				_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			})
		}}
		tk, err := h.Tickets().Issue("p1")
		if err != nil {
			t.Fatal(err)
		}
		rc := dialRawWith(t, d, srv.URL, "ticket="+tk)
		rc.write(t, wsframe.OpText, []byte(`{"type":"hello","data":{"mode":"new"}}`))
		var c *Client
		testrun.WaitFor(t, "p1 is on the loop", func() bool { c, _ = h.Client("p1"); return c != nil && c.lc.Load() != nil })
		lc := c.lc.Load()

		// Send more than the sockets can hold: frames wait on the server
		// until the client reads.
		hold := 2*rcvbuf + maxSendBuffer(t)
		frame := make([]byte, hold/8)
		sent := 0
		for sent*len(frame) <= hold+len(frame) {
			c.sendFrame(frame)
			sent++
		}
		lc.mu.Lock()
		waiting := len(lc.ends)
		lc.mu.Unlock()
		if waiting == 0 {
			t.Fatalf("no frame waits on the server after %d bytes sent", sent*len(frame))
		}
		code := binary.BigEndian.AppendUint16(nil, 4321)
		if halfClosed {
			hangUp(t, rc, clientFrame(true, wsframe.OpClose, [4]byte{}, code))
		} else {
			rc.write(t, wsframe.OpClose, code)
		}

		_ = rc.conn.SetReadDeadline(time.Now().Add(testrun.Within)) // bounds a hung test only
		got := 0
		for {
			op, p, err := rc.read()
			if err != nil {
				t.Fatalf("half-closed %v: after %d of %d frames: %v, want the echo of the close", halfClosed, got, sent, err)
			}
			if op == wsframe.OpClose {
				if len(p) < 2 || websocket.StatusCode(binary.BigEndian.Uint16(p)) != 4321 {
					t.Fatalf("half-closed %v: the echo is %q, want 4321", halfClosed, p)
				}
				break
			}
			got++
		}
		if got < sent {
			t.Fatalf("half-closed %v: %d of %d frames came before the echo", halfClosed, got, sent)
		}
		if _, _, err := rc.read(); !errors.Is(err, io.EOF) {
			t.Fatalf("half-closed %v: after the echo: %v, want the end of the stream", halfClosed, err)
		}
		testrun.WaitFor(t, "p1 is let go", func() bool { _, ok := h.Client("p1"); return !ok && onLoop(h) == 0 })
		rc.conn.(*net.TCPConn).Close()
	}
}

// maxSendBuffer is the most a TCP socket's send buffer grows to
// (net.ipv4.tcp_wmem).
func maxSendBuffer(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	n, err := strconv.Atoi(f[len(f)-1])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCloseEchoWaitsAfterTheEnd: a client that sends its close frame and
// ends its side of the stream at once may still read: the loop reads the
// end, yet keeps the connection until the socket has taken the frames
// waiting and the echo, then shuts it; the end read then ends it.
func TestCloseEchoWaitsAfterTheEnd(t *testing.T) {
	_, lc, peer := fullSocket(t)
	code := binary.BigEndian.AppendUint16(nil, 4321)
	if _, err := syscall.Write(peer, clientFrame(true, wsframe.OpClose, [4]byte{1, 2, 3, 4}, code)); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Shutdown(peer, syscall.SHUT_WR); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for more := true; more; {
		var alive bool
		if alive, more = lc.read(buf); !alive {
			t.Fatal("the connection ended at the client's close, with frames and the echo waiting")
		}
	}
	if alive, _ := lc.read(buf); !alive {
		t.Fatal("the connection ended at the client's end, with frames and the echo waiting")
	}

	// The client reads all; the socket takes the rest as it has room.
	if err := syscall.SetNonblock(peer, true); err != nil {
		t.Fatal(err)
	}
	var tail []byte
	for {
		n, err := syscall.Read(peer, buf)
		if n == 0 && err == nil {
			break // the end of the stream
		}
		if err == syscall.EAGAIN {
			lc.mu.Lock()
			waiting := len(lc.out)
			lc.mu.Unlock()
			if waiting == 0 {
				t.Fatal("all is written, and the socket is not shut")
			}
			lc.writable()
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		tail = append(tail, buf[:n]...)
		tail = tail[max(len(tail)-4, 0):]
	}
	if want := appendFrame(nil, wsframe.OpClose, code); !bytes.Equal(tail, want) {
		t.Fatalf("the stream ends with % x, want the echo % x", tail, want)
	}
	if alive, _ := lc.read(buf); alive {
		t.Fatal("the connection is kept after its last frame was written")
	}
}

// TestLastFramesAreBounded: a close frame that waits for room in a socket
// the client does not read, ours or the echo of the client's, is bounded
// by the write timeout as any frame is, whatever the wait for the answer
// to a close: the sweep cuts the connection.
func TestLastFramesAreBounded(t *testing.T) {
	for _, close := range []string{"ours", "the echo"} {
		c, lc, peer := fullSocket(t)
		switch close {
		case "ours":
			c.Close(websocket.StatusProtocolError, "protocol error")
		case "the echo":
			lc.feed(clientFrame(true, wsframe.OpClose, [4]byte{}, []byte{3, 232}))
		}
		lc.mu.Lock()
		lc.outSince = time.Now().Add(-writeTimeout)
		lc.mu.Unlock()
		lc.sweep(time.Now(), time.Hour, time.Hour)
		if !shut(t, peer) {
			t.Fatalf("%s: a close frame that waited writeTimeout: the connection is not cut", close)
		}
	}
}

// fullSocket returns a client on a loopConn whose socket, one of a pair,
// is full: frames wait for room in it. peer is the client's end.
func fullSocket(t *testing.T) (c *Client, lc *loopConn, peer int) {
	t.Helper()
	fd, peer, sndbuf := socketPair(t)
	c = &Client{msgType: websocket.MessageBinary, send: make(chan []byte, 1), done: make(chan struct{})}
	lc = &loopConn{c: c, fd: fd, maxQueue: 32, r: wsReader{limit: 1 << 20}, pingAt: time.Now(), ended: make(chan struct{})}
	c.lc.Store(lc)
	t.Cleanup(lc.finish)
	for {
		lc.mu.Lock()
		waiting := lc.waiting
		lc.mu.Unlock()
		if waiting {
			return c, lc, peer
		}
		c.sendFrame(make([]byte, sndbuf/8))
	}
}
