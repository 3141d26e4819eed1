//go:build linux

package room

import (
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/internal/wsframe"
)

// onLoop reports how many connections h's event loops serve.
func onLoop[S, I, P any](h *Host[S, I, P]) int {
	if h.sockets == nil {
		return 0
	}
	h.sockets.mu.Lock()
	loops := slices.Clone(h.sockets.loops)
	h.sockets.mu.Unlock()
	n := 0
	for _, l := range loops {
		if l != nil {
			l.mu.Lock()
			n += len(l.conns)
			l.mu.Unlock()
		}
	}
	return n
}

// skipPortable skips a test of the event loop in a build whose default is
// the portable path.
func skipPortable(t *testing.T) {
	t.Helper()
	if defaultSockets != SocketsLoop {
		t.Skip("built with muster_portable: the portable path is the default")
	}
}

// helloOnLoop connects player id to the server at url with a raw client,
// says hello with mode, and returns once h's event loop serves it.
func helloOnLoop[S, I, P any](t *testing.T, h *Host[S, I, P], url, id, mode string) *rawClient {
	t.Helper()
	tk, err := h.Tickets().Issue(id)
	if err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, url, "ticket="+tk)
	rc.write(t, wsframe.OpText, []byte(`{"type":"hello","data":{"mode":"`+mode+`"}}`))
	testrun.WaitFor(t, id+" is on the loop", func() bool {
		c, _ := h.Client(id)
		return c != nil && c.lc.Load() != nil
	})
	return rc
}

// TestPlayersAreServedByTheLoop: after its hello a player's connection is
// served by the event loop, which plays as the portable path does: the
// welcome, a room, inputs in and states out; and it is let go when the
// player leaves.
func TestPlayersAreServedByTheLoop(t *testing.T) {
	skipPortable(t)
	h, srv := startHost(t, Config{})
	a := playtest.DialPlayer(t, srv.URL, h.Tickets(), "a", "")
	a.Hello("new")
	testrun.WaitFor(t, "a is on the loop", func() bool { return onLoop(h) == 1 })
	if c, _ := h.Client("a"); c == nil || c.lc.Load() == nil {
		t.Fatal("a's connection is not on the loop")
	}
	a.Close(websocket.StatusNormalClosure, "bye")
	testrun.WaitFor(t, "a is let go", func() bool { _, ok := h.Client("a"); return !ok && onLoop(h) == 0 })
}

// TestClientGoneWithItsLastFrameIsLetGo: a client whose last frames and
// end of stream come in one read (an oversized frame, then its close, then
// FIN) is let go when its end is read, not when the wait for its answer to
// the server's close frame runs out. The loop once read such a socket
// only until a short read, and so never saw the end that came with it.
func TestClientGoneWithItsLastFrameIsLetGo(t *testing.T) {
	skipPortable(t)
	h, rc := patientLoop(t)
	var last []byte
	last = append(last, clientFrame(true, wsframe.OpText, [4]byte{}, make([]byte, 100))...) // over the read limit
	last = append(last, clientFrame(true, wsframe.OpClose, [4]byte{}, []byte{3, 232})...)
	hangUp(t, rc, last)
	testrun.WaitFor(t, "p1 is let go", func() bool { _, ok := h.Client("p1"); return !ok && onLoop(h) == 0 })
}

// TestMessageBeforeTheCloseIsHandled: a message the session goroutine
// handles ("leave" here) that comes in one read with the client's close
// is handled before the session ends, as the portable path's reader
// handles every message before the close after it. The loop once ended
// the session with the message still queued: the player stayed seated
// until the away timeout.
func TestMessageBeforeTheCloseIsHandled(t *testing.T) {
	skipPortable(t)
	h := newHost(t, newCounter(), Config{})
	runHost(t, h)
	srv := newServer(t, h)
	if _, err := h.OpenRoom(t.Context(), Info{ID: "r", Players: []string{"p1", "p2"}}); err != nil {
		t.Fatal(err)
	}
	rc := helloOnLoop(t, h, srv.URL, "p1", "rejoin")
	var last []byte
	last = append(last, clientFrame(true, wsframe.OpText, [4]byte{}, []byte(`{"type":"leave"}`))...)
	last = append(last, clientFrame(true, wsframe.OpClose, [4]byte{}, []byte{3, 232})...)
	hangUp(t, rc, last)
	testrun.WaitFor(t, "p1's leave is applied", func() bool { return h.RoomOf("p1") == "" })
}

// TestCloseAnswerAfterTooBigEndsTheConnection: a client closed for a
// frame over the read limit (1009) that answers the close frame, as
// browsers do, and waits for the server to end the connection is let go
// when its answer comes, as on the portable path, whatever it sent
// between the two. The loop once dropped everything after the frame too
// big, the answer too, and let such a client go only when its wait for
// the answer ran out (5 s).
func TestCloseAnswerAfterTooBigEndsTheConnection(t *testing.T) {
	skipPortable(t)
	h, rc := patientLoop(t)
	var b []byte
	b = append(b, clientFrame(false, wsframe.OpText, [4]byte{}, make([]byte, 100))...) // over the read limit
	b = append(b, clientFrame(true, wsframe.OpContinuation, [4]byte{}, make([]byte, 10))...)
	b = append(b, clientFrame(true, wsframe.OpText, [4]byte{}, []byte(`{"type":"nobody handles this"}`))...)
	if _, err := rc.conn.Write(b); err != nil {
		t.Fatal(err)
	}
	_ = rc.conn.SetReadDeadline(time.Now().Add(time.Minute)) // bounds a hung test only
	for {
		op, p, err := rc.read()
		if err != nil {
			t.Fatalf("waiting for the close frame: %v", err)
		}
		if op == wsframe.OpClose {
			if len(p) < 2 || websocket.StatusCode(int(p[0])<<8|int(p[1])) != websocket.StatusMessageTooBig {
				t.Fatalf("closed with %q, want 1009", p)
			}
			break
		}
	}
	rc.write(t, wsframe.OpClose, []byte{0x03, 0xf1})
	testrun.WaitFor(t, "p1 is let go", func() bool { _, ok := h.Client("p1"); return !ok && onLoop(h) == 0 })
}

// hangUp writes b, then ends rc's side of the stream: b's frames and the
// end come to the server together.
func hangUp(t *testing.T, rc *rawClient, b []byte) {
	t.Helper()
	if _, err := rc.conn.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := rc.conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
}

// patientLoop starts a host with a read limit of 64 bytes whose loop
// waits an hour for the answer to a close frame, so that the wait is not
// what ends a connection, and returns it with player p1 on its loop.
func patientLoop(t *testing.T) (*Host[*csim, int, *cplayer], *rawClient) {
	t.Helper()
	h := newHost(t, newCounter(), Config{ReadLimit: 64})
	h.sockets.closeWait = time.Hour
	runHost(t, h)
	srv := newServer(t, h)
	return h, helloOnLoop(t, h, srv.URL, "p1", "new")
}

// TestPlayersSpreadOverTheLoops: a host has an event loop for every two
// Ps, and its players' connections go to them in turn; each loop serves
// its players' inputs.
func TestPlayersSpreadOverTheLoops(t *testing.T) {
	skipPortable(t)
	g := newCounter()
	h := newHost(t, g, Config{})
	h.sockets.loops = make([]*sockLoop, 2) // as with four Ps
	runHost(t, h)
	srv := newServer(t, h)
	ids := []string{"p1", "p2", "p3", "p4"}
	if _, err := h.OpenRoom(t.Context(), Info{ID: "r", Players: ids}); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		rc := helloOnLoop(t, h, srv.URL, id, "rejoin")
		rc.write(t, wsframe.OpText, []byte(`{"type":"input","data":1}`))
	}
	h.sockets.mu.Lock()
	loops := slices.Clone(h.sockets.loops)
	h.sockets.mu.Unlock()
	for i, l := range loops {
		l.mu.Lock()
		n := len(l.conns)
		l.mu.Unlock()
		if n != 2 {
			t.Fatalf("loop %d serves %d connections, want 2", i, n)
		}
	}
	testrun.WaitFor(t, "every player's input is applied", func() bool {
		n := 0
		for _, line := range g.lines("r") {
			if strings.HasPrefix(line, "input ") {
				n++
			}
		}
		return n == len(ids)
	})
}
