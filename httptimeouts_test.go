package muster_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/matchmaking"
)

// closedWithin bounds every wait in TestHTTPTimeouts; it is a failure
// deadline, never a measurement.
const closedWithin = 10 * time.Second

// TestHTTPTimeouts: a stranger's keep-alive connection that goes quiet
// after one request, and a POST whose body never comes, are closed by the
// server at its idle and body timeouts; they used to be held for ever. A
// player's WebSocket, and one relayed to another server, that have been
// open and idle for longer than both stay open.
func TestHTTPTimeouts(t *testing.T) {
	t.Parallel()
	const idle, body = 200 * time.Millisecond, 200 * time.Millisecond
	bp := memory.New()
	t.Cleanup(func() { bp.Close() }) // after the servers' own cleanups
	a := startFleetServer(t, bp, "a", muster.WithHTTPTimeouts(idle, body), muster.WithGuestTickets("/ticket"))
	b := startFleetServer(t, bp, "b", muster.WithHTTPTimeouts(idle, body))
	waitUntil(t, "a sees b ready", func() bool {
		n, ok := a.Fleet().Node(b.NodeID())
		return ok && n.State == fleet.StateReady
	})
	ctx := t.Context()

	// The players connect first: they are open and idle for as long as
	// the strangers are.
	// msgs has what a player's connection reads: it reads all the while,
	// so that the server's pings are answered.
	type msgs chan []byte
	player := func(s *muster.Server, id string, query url.Values) (*websocket.Conn, msgs) {
		t.Helper()
		tk, err := s.Tickets().Issue(id)
		if err != nil {
			t.Fatal(err)
		}
		query.Set("ticket", tk)
		c, _, err := websocket.Dial(ctx, "ws://"+a.addr+"/play?"+query.Encode(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.CloseNow() })
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"hello","data":{"mode":"new"}}`)); err != nil {
			t.Fatal(err)
		}
		if _, msg, err := c.Read(ctx); err != nil || !strings.Contains(string(msg), `"player":"`+id+`"`) {
			t.Fatalf("%s after hello: %s, %v; want a welcome", id, msg, err)
		}
		in := make(msgs, 64)
		go func() {
			defer close(in)
			for {
				_, msg, err := c.Read(ctx)
				if err != nil {
					return
				}
				select {
				case in <- msg:
				case <-ctx.Done():
					return
				}
			}
		}()
		return c, in
	}
	direct, directIn := player(a.Server, "p1", url.Values{})
	relayed, relayedIn := player(b.Server, "p2", url.Values{"node": {"b"}})
	if m := metricsOf(t, a.addr); !strings.Contains(m, "\nmuster_relay_connections_active 1\n") {
		t.Fatalf("a relays no connection to b:\n%s", m)
	}

	idleConn, idleR := keptAlive(t, a.addr, fleet.PathLive)

	slowConn, slowR := rawConn(t, a.addr)
	if _, err := io.WriteString(slowConn, "POST /ticket HTTP/1.1\r\nHost: game\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"player\":"); err != nil {
		t.Fatal(err)
	}

	waitClosed(t, "the idle keep-alive connection", idleConn, idleR)
	waitClosed(t, "the connection whose body never came", slowConn, slowR)

	// Both WebSockets have now been open longer than both timeouts, and
	// idle: each still reaches its room host.
	for _, p := range []struct {
		name string
		c    *websocket.Conn
		in   msgs
	}{{"the player's WebSocket", direct, directIn}, {"the relayed WebSocket", relayed, relayedIn}} {
		wctx, cancel := context.WithTimeout(ctx, closedWithin)
		defer cancel()
		if err := p.c.Write(wctx, websocket.MessageText, []byte(`{"type":"queue","data":{"playlist":"duel"}}`)); err != nil {
			t.Fatalf("%s after the timeouts: %v", p.name, err)
		}
		for waiting := false; !waiting; {
			select {
			case msg, ok := <-p.in:
				if !ok {
					t.Fatalf("%s ended after the timeouts", p.name)
				}
				waiting = strings.Contains(string(msg), `"queue.waiting"`)
			case <-wctx.Done():
				t.Fatalf("%s: no queue.waiting within %v", p.name, closedWithin)
			}
		}
	}
}

// fleetServer is a server of TestHTTPTimeouts's fleet.
type fleetServer struct {
	*muster.Server
	addr string
}

// startFleetServer runs server id of a fleet on bp, with the duel
// playlist, until the test ends, and returns once it is ready.
func startFleetServer(t *testing.T, bp *memory.Backplane, id string, opts ...muster.Option) fleetServer {
	t.Helper()
	l := loopback(t)
	cfg, err := config.Parse(fmt.Appendf(nil, `muster:
  security:
    key: http-timeouts-fleet-key-0123456789
  server:
    fleet:
      node-id: %s
      internal-address: %s
`, id, l.Addr()), nil, muster.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]muster.Option{muster.WithListener(l), muster.WithBackplane(bp), quiet,
		muster.WithPlaylists(matchmaking.Playlist{Name: "duel"})}, opts...)
	s, err := muster.New(Counter{}, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	runServer(t, s)
	waitUntil(t, id+" ready", func() bool { return s.Fleet().State() == fleet.StateReady })
	return fleetServer{s, l.Addr().String()}
}

// metricsOf returns the /metrics page of the server at addr.
func metricsOf(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// rawConn opens a TCP connection to addr, closed when the test ends.
func rawConn(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// keptAlive asks addr for path on a connection of its own, checks the 200
// that keeps it alive, and returns the connection, left quiet.
func keptAlive(t *testing.T, addr, path string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, r := rawConn(t, addr)
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: muster\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("GET %s: %d, close %v; want 200 on a kept-alive connection", path, resp.StatusCode, resp.Close)
	}
	return c, r
}

// waitClosed reads c until the server closes it, and fails the test if it
// is still open after closedWithin.
func waitClosed(t *testing.T, what string, c net.Conn, r *bufio.Reader) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(closedWithin))
	_, err := io.Copy(io.Discard, r)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("%s still open after %v", what, closedWithin)
	}
	// nil (EOF) or a reset: closed by the server.
}
