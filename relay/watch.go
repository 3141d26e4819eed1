package relay

import (
	"bufio"
	"net"
	"net/http"
	"sync/atomic"
)

// watchedConn remembers whether a read from the network failed.
//
// The WebSocket library reports a connection that ends exactly between two
// frames of a fragmented message as the end of that message. A relay that
// believed it would hand the far side a truncated message as if it were
// whole, where a direct connection would have failed the read. copyMessage
// therefore asks the source connection whether the network gave out before
// it forwards the final frame.
type watchedConn struct {
	net.Conn
	failed atomic.Bool
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.failed.Store(true)
	}
	return n, err
}

// hijackWatcher is the ResponseWriter handed to websocket.Accept, so that
// the hijacked client connection is watched too.
type hijackWatcher struct {
	http.ResponseWriter
	conn *watchedConn
}

func (h *hijackWatcher) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	h.conn = &watchedConn{Conn: c}
	return h.conn, brw, nil
}

// Unwrap lets http.ResponseController reach the server's ResponseWriter.
func (h *hijackWatcher) Unwrap() http.ResponseWriter { return h.ResponseWriter }
