package muster_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/muster-gg/muster/room"
)

// The players' side of these tests: a WebSocket to a server's /play.

// playTimeout bounds each dial, write and read of a playConn: a failure
// deadline, never a measurement.
const playTimeout = 10 * time.Second

// playConn is a player's WebSocket to a server's /play.
type playConn struct {
	*websocket.Conn
}

// tryDialPlay connects to /play?query at addr (host:port). It returns the
// upgrade's response with the error, for a test of a refusal. The test's
// cleanup closes the connection.
func tryDialPlay(t *testing.T, addr, query string) (*playConn, *http.Response, error) {
	ctx, cancel := context.WithTimeout(t.Context(), playTimeout)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws://"+addr+"/play?"+query, nil)
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { c.CloseNow() })
	return &playConn{c}, resp, nil
}

// dialPlay is tryDialPlay that fails the test when the upgrade fails.
func dialPlay(t *testing.T, addr, query string) *playConn {
	t.Helper()
	c, _, err := tryDialPlay(t, addr, query)
	if err != nil {
		t.Fatalf("dial /play?%s on %s: %v", query, addr, err)
	}
	return c
}

// dialPlayer is dialPlay as player id, with a ticket of tickets' before
// query's other parameters ("" for none).
func dialPlayer(t *testing.T, addr string, tickets *room.Tickets, id, query string) *playConn {
	t.Helper()
	return dialPlay(t, addr, ticketed(t, tickets, id, query))
}

// ticketed returns a query with a ticket of tickets' for player id before
// query's other parameters ("" for none).
func ticketed(t *testing.T, tickets *room.Tickets, id, query string) string {
	t.Helper()
	tk, err := tickets.Issue(id)
	if err != nil {
		t.Fatal(err)
	}
	if query != "" {
		return "ticket=" + tk + "&" + query
	}
	return "ticket=" + tk
}

// write writes the packet {"type":typ,"data":data}.
func (c *playConn) write(typ string, data any) error {
	ctx, cancel := context.WithTimeout(context.Background(), playTimeout)
	defer cancel()
	return wsjson.Write(ctx, c.Conn, map[string]any{"type": typ, "data": data})
}

// send is write for the test's goroutine: it fails the test on an error.
func (c *playConn) send(t *testing.T, typ string, data any) {
	t.Helper()
	if err := c.write(typ, data); err != nil {
		t.Fatalf("write %s: %v", typ, err)
	}
}

// receive reads the next packet, or the error that ended the connection
// (websocket.CloseStatus tells its code).
func (c *playConn) receive() (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), playTimeout)
	defer cancel()
	var m map[string]any
	err := wsjson.Read(ctx, c.Conn, &m)
	return m, err
}

// next reads until a packet of one of types and returns it; it fails the
// test if the connection ends first.
func (c *playConn) next(t *testing.T, types ...string) map[string]any {
	t.Helper()
	for {
		m, err := c.receive()
		if err != nil {
			t.Fatalf("waiting for a packet of %q: %v", types, err)
		}
		if typ, _ := m["type"].(string); slices.Contains(types, typ) {
			return m
		}
	}
}

// welcome says hello as a new player and returns the welcome; it fails
// the test unless the welcome is for player.
func (c *playConn) welcome(t *testing.T, player string) map[string]any {
	t.Helper()
	c.send(t, "hello", map[string]string{"mode": "new"})
	w := c.next(t, "welcome")
	if w["player"] != player {
		t.Fatalf("after hello: %v, want a welcome for %s", w, player)
	}
	return w
}
