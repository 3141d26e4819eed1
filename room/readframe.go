package room

import (
	"context"
	"io"
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
