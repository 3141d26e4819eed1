package muster_test

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/testrun"
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
	seesReady(t, a, b)
	ctx := t.Context()

	// The players connect first: they are open and idle for as long as
	// the strangers are.
	// msgs has what a player's connection reads: it reads all the while,
	// so that the server's pings are answered.
	type msgs chan []byte
	player := func(s *muster.Server, id, query string) (*playConn, msgs) {
		t.Helper()
		c := dialPlayer(t, a.addr, s.Tickets(), id, query)
		c.welcome(t, id)
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
	direct, directIn := player(a.Server, "p1", "")
	relayed, relayedIn := player(b.Server, "p2", "node=b")
	if m := metricsOf(t, a.addr); !strings.Contains(m, "\nmuster_relay_connections_active 1\n") {
		t.Fatalf("a relays no connection to b:\n%s", m)
	}

	idleConn, idleR := testrun.KeptAlive(t, a.addr, "muster", fleet.PathLive)

	slowConn, slowR := testrun.RawConn(t, a.addr)
	if _, err := io.WriteString(slowConn, "POST /ticket HTTP/1.1\r\nHost: game\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"player\":"); err != nil {
		t.Fatal(err)
	}

	testrun.WaitClosed(t, "the idle keep-alive connection", idleConn, idleR, closedWithin)
	testrun.WaitClosed(t, "the connection whose body never came", slowConn, slowR, closedWithin)

	// Both WebSockets have now been open longer than both timeouts, and
	// idle: each still reaches its room host.
	for _, p := range []struct {
		name string
		c    *playConn
		in   msgs
	}{{"the player's WebSocket", direct, directIn}, {"the relayed WebSocket", relayed, relayedIn}} {
		if err := p.c.write("queue", map[string]string{"playlist": "duel"}); err != nil {
			t.Fatalf("%s after the timeouts: %v", p.name, err)
		}
		wait := time.After(closedWithin)
		for waiting := false; !waiting; {
			select {
			case msg, ok := <-p.in:
				if !ok {
					t.Fatalf("%s ended after the timeouts", p.name)
				}
				waiting = strings.Contains(string(msg), `"queue.waiting"`)
			case <-wait:
				t.Fatalf("%s: no queue.waiting within %v", p.name, closedWithin)
			}
		}
	}
}

// startFleetServer runs server id of a fleet on bp, with the duel
// playlist, until the test ends, and returns once it is ready.
func startFleetServer(t *testing.T, bp *memory.Backplane, id string, opts ...muster.Option) *testServer {
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
	return start(t, Counter{}, cfg, l, append([]muster.Option{muster.WithBackplane(bp), quiet,
		muster.WithPlaylists(matchmaking.Playlist{Name: "duel"})}, opts...)...)
}
