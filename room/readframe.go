package room

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/coder/websocket"
)

// keptReadBuffer is the largest read buffer a connection keeps between
// messages: a rare large message does not pin its size to the player for
// as long as it stays connected.
const keptReadBuffer = 1024

// readFrame reads c's next message into c.rbuf, which it grows as needed
// and reuses, instead of a fresh buffer per message as websocket.Conn.Read
// makes. The frame is good until the next call: what is kept beyond it is
// copied (a module's message body is).
func (c *Client) readFrame(ctx context.Context) ([]byte, error) {
	_, r, err := c.conn.Reader(ctx)
	if err != nil {
		return nil, err
	}
	b := c.rbuf[:0]
	if cap(b) > keptReadBuffer {
		b = nil
	}
	if b == nil {
		b = make([]byte, 0, 256)
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // let append pick the growth
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			c.rbuf = b
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// brokeProtocol reports whether err, from readFrame, is coder/websocket's
// for a frame that broke RFC 6455 (reserved bits, an unknown opcode, a
// control frame fragmented or long, a continuation out of place, a bad
// close payload, an unmasked frame), after which it has sent the close
// frame (1002), for all but the unmasked frame. Its errors for those have
// no type of their own: brokeProtocol tells them from the others, which
// are the connection's end (the client's close frame, the end of the
// stream, a network error, the connection closed, ctx done) or a message
// over the read limit.
func brokeProtocol(err error) bool {
	if websocket.CloseStatus(err) != -1 {
		return false
	}
	var ne net.Error
	return !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, net.ErrClosed) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &ne)
}
