package muster_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testbin"
	"github.com/muster-gg/muster/room"
)

// The connection limits of a fleet, tried from outside: each test client
// names its address with X-Forwarded-For, which the servers trust from
// loopback, so that one machine plays several addresses.

// limitsKey is the fleet key of these tests' servers.
const limitsKey = "fleet-limits-test-key-0123456789"

// limitsServer runs server id of a fleet with limits, the YAML of
// muster.room.limits (indented under it), on the memory backplane bp or,
// when bp is nil, on Redis at redisAddr, and returns it once it is ready.
// Its heartbeat of 2 s makes each backplane call's deadline 0.5 s: a count
// that gives up is kept in this server's memory (and the next ones until a
// heartbeat reaches the backplane), which a busy machine made happen with
// deadlines of 125 ms.
func limitsServer(t *testing.T, bp *memory.Backplane, redisAddr, id, limits string) *testServer {
	t.Helper()
	l := loopback(t)
	redis := ""
	if bp == nil {
		redis = "\n      redis: " + redisAddr
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `muster:
  security:
    key: %s
  server:
    http:
      trusted-proxies: 127.0.0.1
    fleet:
      node-id: %s
      heartbeat: 2s
      internal-address: %s%s
  room:
    limits:
%s`, limitsKey, id, l.Addr(), redis, limits), nil, muster.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	opts := []muster.Option{quiet}
	if bp != nil {
		opts = append(opts, muster.WithBackplane(bp))
	}
	return start(t, Counter{}, cfg, l, opts...)
}

// limitsFleet runs servers ids of one fleet with limits on a memory
// backplane of its own, and returns them once each sees the others ready.
func limitsFleet(t *testing.T, limits string, ids ...string) []*testServer {
	t.Helper()
	bp := memory.New()
	t.Cleanup(func() { bp.Close() }) // after the servers' own cleanups
	return limitsFleetOn(t, bp, "", limits, ids...)
}

// limitsFleetOn is limitsFleet on bp, or on Redis at redisAddr when bp is
// nil.
func limitsFleetOn(t *testing.T, bp *memory.Backplane, redisAddr, limits string, ids ...string) []*testServer {
	t.Helper()
	var servers []*testServer
	for _, id := range ids {
		servers = append(servers, limitsServer(t, bp, redisAddr, id, limits))
	}
	for _, s := range servers {
		for _, other := range servers {
			if other != s {
				seesReady(t, s, other)
			}
		}
	}
	return servers
}

// client is a player's client at an address of its own.
type client struct {
	t    *testing.T
	addr string // the address X-Forwarded-For names
	n    int    // connections tried, for player ids
}

// dial connects through server via (to the server node names, when node is
// not "") as a new player, and returns the connection once welcomed, or
// nil and the HTTP status of the refused upgrade.
func (c *client) dial(via *testServer, node string) (*playtest.Conn, int) {
	c.t.Helper()
	c.n++
	id := fmt.Sprintf("%s-%d", c.addr, c.n)
	tk, err := via.Tickets().Issue(id)
	if err != nil {
		c.t.Fatal(err)
	}
	query := "ticket=" + tk
	if node != "" {
		query += "&node=" + node
	}
	conn, status, err := playtest.TryDial(c.t, playtest.PlayURL("http://"+via.addr, query),
		&websocket.DialOptions{HTTPHeader: http.Header{"X-Forwarded-For": {c.addr}}})
	if err != nil {
		if status == 0 {
			c.t.Fatalf("%s through %s to %q: %v", id, via.NodeID(), node, err)
		}
		return nil, status
	}
	welcome(c.t, conn, id)
	return conn, status
}

// open is dial that fails the test unless the connection is welcomed.
func (c *client) open(via *testServer, node string) *playtest.Conn {
	c.t.Helper()
	conn, status := c.dial(via, node)
	if conn == nil {
		c.t.Fatalf("%s through %s to %q refused with %d", c.addr, via.NodeID(), node, status)
	}
	return conn
}

// refused is dial that fails the test unless the upgrade is refused with
// 429.
func (c *client) refused(via *testServer, node, why string) {
	c.t.Helper()
	if conn, status := c.dial(via, node); status != http.StatusTooManyRequests {
		conn.CloseNow()
		c.t.Fatalf("%s through %s to %q %s: answered %d, want 429", c.addr, via.NodeID(), node, why, status)
	}
}

// TestRelayedConnectionsCountAgainstOpen: muster.room.limits.open bounds
// every socket a server holds for an address, played there or relayed
// through it with ?node= (#39.1). An address used to hold its cap on a
// server and as many again relayed through it to each other server.
func TestRelayedConnectionsCountAgainstOpen(t *testing.T) {
	servers := limitsFleet(t, "      open: 4\n", "a", "b", "c")
	a, b := servers[0], servers[1]

	x := &client{t: t, addr: "203.0.113.7"}
	x.open(a, "")
	x.open(a, "a")
	x.open(a, "b")
	last := x.open(a, "c")
	x.refused(a, "c", "holding 4 sockets on a, 2 of them relayed")
	x.refused(a, "", "holding 4 sockets on a, 2 of them relayed")
	x.refused(a, "b", "holding 4 sockets on a, 2 of them relayed")

	// A relayed socket that ends is let go of on the relaying server.
	last.Close(websocket.StatusNormalClosure, "")
	waitUntil(t, "a lets go of the relayed socket that ended", func() bool {
		conn, status := x.dial(a, "c")
		if status != http.StatusTooManyRequests && conn == nil {
			t.Fatalf("relayed through a after one of 4 ended: answered %d", status)
		}
		return conn != nil
	})

	// Another address has a cap of its own.
	(&client{t: t, addr: "203.0.113.8"}).open(a, "b")

	// The node a socket is relayed to counts it by the client's signed
	// address, not by the relaying server's: y's 3 relayed to b and 1
	// direct fill its cap on b.
	y := &client{t: t, addr: "198.51.100.9"}
	for range 3 {
		y.open(a, "b")
	}
	y.open(b, "")
	y.refused(b, "", "holding 3 sockets on b relayed from a and 1 direct")
	y.refused(a, "b", "holding 4 sockets on b")
}

// TestBackplaneLimitsHoldAcrossFleet: with muster.room.limits.store
// backplane, an address over its connect rate on one server, or locked
// out there by bad tickets, is refused by another (#39.9), as tickets and
// lobby codes are counted once for the fleet; on the memory backplane and
// on Redis.
func TestBackplaneLimitsHoldAcrossFleet(t *testing.T) {
	const limits = "      store: backplane\n      connects: 3\n      failures: 2\n"
	for _, tc := range []struct {
		name  string
		fleet func(t *testing.T) []*testServer
	}{
		{"memory", func(t *testing.T) []*testServer { return limitsFleet(t, limits, "a", "b") }},
		{"redis", func(t *testing.T) []*testServer {
			rd := testbin.StartRedis(t)
			return limitsFleetOn(t, nil, rd.Addr, limits, "a", "b")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers := tc.fleet(t)
			a, b := servers[0], servers[1]

			// The connect rate: 3 on a, and the 4th, on b, is over it.
			x := &client{t: t, addr: "203.0.113.7"}
			for range 3 {
				x.open(a, "").Close(websocket.StatusNormalClosure, "")
			}
			x.refused(b, "", "after 3 connects on a, at connects: 3")
			x.refused(a, "", "after 3 connects on a, at connects: 3")

			// The lockout: 2 bad tickets on a, and b refuses the address.
			y := &client{t: t, addr: "198.51.100.9"}
			for range 2 {
				conn, status, err := playtest.TryDial(t, playtest.PlayURL("http://"+a.addr, "ticket=forged"),
					&websocket.DialOptions{HTTPHeader: http.Header{"X-Forwarded-For": {y.addr}}})
				if err != nil {
					t.Fatalf("a forged ticket from %s refused with %d before any failure counted: %v", y.addr, status, err)
				}
				conn.Hello("new")
				if code := conn.CloseCode(); code != room.StatusBadTicket {
					t.Fatalf("forged ticket closed with %d, want %d", code, room.StatusBadTicket)
				}
			}
			y.refused(b, "", "locked out on a by 2 bad tickets, at failures: 2")

			// Another address is neither over the rate nor locked out.
			(&client{t: t, addr: "192.0.2.44"}).open(b, "")
		})
	}
}
