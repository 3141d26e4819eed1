package playtest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// PlayURL returns the ws:// (or wss://) URL of /play?query at base, an
// http:// (or https://) URL such as an httptest server's.
func PlayURL(base, query string) string {
	return "ws" + strings.TrimPrefix(base, "http") + "/play?" + query
}

// Dial connects to url with opts (nil for none) and fails the test if it
// cannot. The test's cleanup closes the connection.
func Dial(tb testing.TB, url string, opts *websocket.DialOptions) *Conn {
	tb.Helper()
	c, _, err := TryDial(tb, url, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// DialPlay is Dial of PlayURL(base, query) with no options.
func DialPlay(tb testing.TB, base, query string) *Conn {
	tb.Helper()
	return Dial(tb, PlayURL(base, query), nil)
}

// DialPlayer is DialPlay as player id, with a ticket from tickets and
// query's other parameters ("" for none).
func DialPlayer(tb testing.TB, base string, tickets Tickets, id, query string) *Conn {
	tb.Helper()
	tk, err := tickets.Issue(id)
	if err != nil {
		tb.Fatal(err)
	}
	return DialPlay(tb, base, withTicket(query, tk))
}

// withTicket adds ticket to query.
func withTicket(query, ticket string) string {
	if query != "" {
		query += "&"
	}
	return query + "ticket=" + ticket
}

// Join dials url, says hello as a new player and returns the connection
// and the first packet: a welcome, when the ticket in url is good, else
// the error that closed the connection. The test's cleanup closes the
// connection.
func Join(tb testing.TB, url string) (*Conn, map[string]any, error) {
	c, _, err := TryDial(tb, url, nil)
	if err != nil {
		return nil, nil, err
	}
	if err := c.WritePacket("hello", map[string]string{"mode": "new"}); err != nil {
		return c, nil, err
	}
	m, err := c.Receive()
	return c, m, err
}

// TryDial connects to url with opts (nil for none). It returns the
// connection and 101, or nil, the HTTP status of the refused upgrade (0
// when no answer came) and the error. The test's cleanup closes the
// connection.
func TryDial(tb testing.TB, url string, opts *websocket.DialOptions) (*Conn, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		return nil, status, fmt.Errorf("dial %s: %w", url, err)
	}
	tb.Cleanup(func() { c.CloseNow() })
	return &Conn{Conn: c, tb: tb}, http.StatusSwitchingProtocols, nil
}
