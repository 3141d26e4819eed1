package room

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
)

// The two ways a player's connection is served after its hello:
// SocketsLoop, the event loop (loop_linux.go), where it runs, and
// SocketsPortable, a reader and a writer goroutine per connection through
// coder/websocket, everywhere. Clients see no difference.
const (
	SocketsLoop     = "loop"
	SocketsPortable = "portable"
)

// hijacked is the ResponseWriter the upgrade is given: it keeps the
// connection and the buffers the upgrade hijacked, for the event loop.
type hijacked struct {
	http.ResponseWriter
	conn net.Conn
	brw  *bufio.ReadWriter
}

// Hijack hijacks the connection and keeps what it returns.
func (w *hijacked) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.conn, w.brw = conn, brw
	}
	return conn, brw, err
}

// reader returns the buffered reader the upgrade read with, or nil.
func (w *hijacked) reader() *bufio.Reader {
	if w.brw == nil {
		return nil
	}
	return w.brw.Reader
}

// loopReceiver returns what the event loop calls with each message of a
// client: the message limit and the envelope are checked on the loop, and
// an input is queued for its room there; anything else goes to the
// client's session goroutine, in order. It returns false when it closed
// the client.
func (h *Host[Sim, Input, Player]) loopReceiver() func(lc *loopConn, c *Client, frame []byte) bool {
	return func(lc *loopConn, c *Client, frame []byte) bool {
		typ, body, ok := h.unwrap(c, &lc.limit, frame)
		if !ok {
			return false
		}
		if typ == msgInput && lc.inline() {
			return h.input(c, body)
		}
		lc.queue(typ, bytes.Clone(body))
		return true
	}
}
