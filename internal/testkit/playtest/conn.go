package playtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Timeout bounds each dial, write and read, and twice it a wait for a
// packet (Next): a bound on a hung test, never a measurement.
const Timeout = 10 * time.Second

// Conn is one WebSocket connection to a room host's /play endpoint. The
// embedded websocket.Conn is there for what the methods do not cover (a
// read with a deadline of the test's own, a close with a code).
type Conn struct {
	*websocket.Conn
	tb testing.TB
}

// WritePacket writes the packet {"type":typ,"data":data} (no data when
// data is nil).
func (c *Conn) WritePacket(typ string, data any) error {
	msg := map[string]any{"type": typ}
	if data != nil {
		msg["data"] = data
	}
	frame, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return c.WriteText(string(frame))
}

// WriteText writes frame as it is, in a text message.
func (c *Conn) WriteText(frame string) error {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	return c.Conn.Write(ctx, websocket.MessageText, []byte(frame))
}

// Send is WritePacket for the test's goroutine: it fails the test on an error.
func (c *Conn) Send(typ string, data any) {
	c.tb.Helper()
	if err := c.WritePacket(typ, data); err != nil {
		c.tb.Fatalf("write %s: %v", typ, err)
	}
}

// SendText is WriteText for the test's goroutine: it fails the test on an
// error.
func (c *Conn) SendText(frame string) {
	c.tb.Helper()
	if err := c.WriteText(frame); err != nil {
		c.tb.Fatalf("write %s: %v", frame, err)
	}
}

// Hello says hello in mode ("new" or "rejoin").
func (c *Conn) Hello(mode string) {
	c.tb.Helper()
	c.Send("hello", map[string]string{"mode": mode})
}

// Welcome says hello in mode and returns the welcome, failing the test
// if the connection ends first.
func (c *Conn) Welcome(mode string) map[string]any {
	c.tb.Helper()
	c.Hello(mode)
	return c.Next("welcome")
}

// Quiet returns nil if nothing comes on the connection for d, and it
// stays open, else an error that says what came: a packet, or the
// connection's end. The connection is no use after a quiet d: a read
// that runs out of time closes it.
func (c *Conn) Quiet(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, data, err := c.Conn.Read(ctx)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return nil
	case err != nil:
		return fmt.Errorf("the connection ended: %w", err)
	}
	return fmt.Errorf("sent %s", data)
}

// ErrUndecodable is the error of a packet that is not a JSON object.
var ErrUndecodable = errors.New("playtest: undecodable packet")

// Receive returns the next packet, or the error that ended the
// connection (websocket.CloseStatus tells its code), or ErrUndecodable.
func (c *Conn) Receive() (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	return c.receive(ctx)
}

func (c *Conn) receive(ctx context.Context) (map[string]any, error) {
	_, data, err := c.Conn.Read(ctx)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w %q", ErrUndecodable, data)
	}
	return m, nil
}

// Next reads until a packet of type typ and returns it; it fails the test
// if the connection ends first, a packet is undecodable or none has come
// within twice Timeout.
func (c *Conn) Next(typ string) map[string]any {
	c.tb.Helper()
	return c.NextWhere(fmt.Sprintf("%q", typ), func(m map[string]any) bool { return m["type"] == typ })
}

// NextWhere is Next for the first packet that satisfies cond, which what
// describes.
func (c *Conn) NextWhere(what string, cond func(map[string]any) bool) map[string]any {
	c.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*Timeout)
	defer cancel()
	for {
		m, err := c.receive(ctx)
		if err != nil {
			c.tb.Fatalf("waiting for %s: %v", what, err)
		}
		if cond(m) {
			return m
		}
	}
}

// CloseCode reads until the connection ends and returns its close code
// (-1 when it ended without one). An undecodable packet on the way fails
// the test, which goes on reading.
func (c *Conn) CloseCode() websocket.StatusCode {
	for {
		_, err := c.Receive()
		if errors.Is(err, ErrUndecodable) {
			c.tb.Error(err)
			continue
		}
		if err != nil {
			return websocket.CloseStatus(err)
		}
	}
}
