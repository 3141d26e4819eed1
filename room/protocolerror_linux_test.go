//go:build linux

package room

import (
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/internal/wsframe"
)

// TestProtocolErrorFailsTheConnection: a frame that breaks RFC 6455 fails
// the connection (section 7.1.7), on either path: the client gets the
// close frame, 1002, then the end of the stream, without the server
// waiting for its answer, which a client that broke the protocol cannot
// be trusted to give. The event loop once waited the whole close wait
// for it, and the portable path coder/websocket's (5 s).
func TestProtocolErrorFailsTheConnection(t *testing.T) {
	frames := []struct {
		name  string
		frame []byte
	}{
		{"reserved bits", append([]byte{0xc1}, clientFrame(true, wsframe.OpText, [4]byte{}, []byte("x"))[1:]...)},
		{"an unknown opcode", clientFrame(true, 0x3, [4]byte{}, []byte("x"))},
		{"a fragmented ping", clientFrame(false, wsframe.OpPing, [4]byte{}, []byte("x"))},
		{"a continuation out of place", clientFrame(true, wsframe.OpContinuation, [4]byte{}, []byte("x"))},
	}
	for _, mode := range []string{SocketsLoop, SocketsPortable} {
		for _, f := range frames {
			t.Run(mode+"/"+f.name, func(t *testing.T) {
				h := newHost(t, newCounter(), Config{Sockets: mode})
				if h.sockets != nil {
					h.sockets.closeWait = time.Hour // not what ends the connection
				}
				runHost(t, h)
				srv := newServer(t, h)
				tk, err := h.Tickets().Issue("p1")
				if err != nil {
					t.Fatal(err)
				}
				rc := dialRaw(t, srv.URL, "ticket="+tk)
				rc.write(t, wsframe.OpText, []byte(`{"type":"hello","data":{"mode":"new"}}`))
				var c *Client
				testrun.WaitFor(t, "p1 is placed", func() bool {
					c, _ = h.Client("p1")
					return c != nil && (mode == SocketsPortable || c.lc.Load() != nil)
				})
				if _, err := rc.conn.Write(f.frame); err != nil {
					t.Fatal(err)
				}
				_ = rc.conn.SetReadDeadline(time.Now().Add(testrun.Within)) // bounds a hung test only
				for {
					op, p, err := rc.read()
					if err != nil {
						t.Fatalf("waiting for the close frame: %v", err)
					}
					if op != wsframe.OpClose {
						continue
					}
					if len(p) < 2 || websocket.StatusCode(binary.BigEndian.Uint16(p)) != websocket.StatusProtocolError {
						t.Fatalf("closed with %q, want 1002", p)
					}
					break
				}
				if _, _, err := rc.read(); !errors.Is(err, io.EOF) {
					t.Fatalf("after the close frame: %v, want the end of the stream", err)
				}
				if code, reason := closed(c); code != websocket.StatusProtocolError {
					t.Fatalf("the host closed the client with %d %q, want 1002", code, reason)
				}
				testrun.WaitFor(t, "p1 is let go", func() bool { _, ok := h.Client("p1"); return !ok && onLoop(h) == 0 })
			})
		}
	}
}
