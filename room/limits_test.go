package room

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// addrHeader names the client address a test server makes the request
// come from, as a trusted proxy's X-Forwarded-For would.
const addrHeader = "X-Test-Remote-Addr"

// startHostAt is startHost behind a front that sets r.RemoteAddr from
// addrHeader, so that a test on loopback connects from any address.
func startHostAt(t *testing.T, cfg Config) (*Host[*csim, int, *cplayer], *httptest.Server) {
	t.Helper()
	h := newHost(t, newCounter(), cfg)
	runHost(t, h)
	play := h.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get(addrHeader); a != "" {
			r.RemoteAddr = a
		}
		play.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return h, srv
}

// dialFrom dials url as the client at addr (host:port) and returns the
// connection, or nil and the HTTP status of a refused upgrade.
func dialFrom(t *testing.T, url, addr string) (*playtest.Conn, int) {
	t.Helper()
	c, status, err := playtest.TryDial(t, url, &websocket.DialOptions{HTTPHeader: http.Header{addrHeader: {addr}}})
	if err != nil && status == 0 {
		t.Fatalf("dial from %s: %v", addr, err)
	}
	return c, status
}

// connectStatus is the status the host answers a plain GET from addr
// with: 429 when the address is over its limits, else the refused
// upgrade's.
func connectStatus(h *Host[*csim, int, *cplayer], addr string) int {
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/play", nil)
	r.RemoteAddr = addr
	h.Handler().ServeHTTP(rec, r)
	return rec.Code
}

// The connect rate counts an IPv6 client by its /64: a stranger with a
// /64 does not start the limit afresh at each of its 2^64 addresses. An
// IPv4-mapped address is its IPv4 address.
func TestConnectRateCountsIPv6By64(t *testing.T) {
	h := newHost(t, newCounter(), Config{Limits: Limits{Connects: 2}})
	runHost(t, h)
	for _, tc := range []struct {
		client          string   // the client the rate counts
		within          []string // two connects within the rate
		over, neighbour string   // a third connect from the client; one from the next address
	}{
		{"2001:db8:1:2::/64", []string{"[2001:db8:1:2::1]:4000", "[2001:db8:1:2::2]:4000"}, "[2001:db8:1:2:ffff::3]:4000", "[2001:db8:1:3::1]:4000"},
		{"192.0.2.1, once IPv4-mapped", []string{"[::ffff:192.0.2.1]:4000", "192.0.2.1:4001"}, "192.0.2.1:4002", "192.0.2.2:4000"},
	} {
		for _, addr := range tc.within {
			if code := connectStatus(h, addr); code == http.StatusTooManyRequests {
				t.Fatalf("connect from %s: 429 within the rate", addr)
			}
		}
		if code := connectStatus(h, tc.over); code != http.StatusTooManyRequests {
			t.Fatalf("third connect from %s answered %d, want 429", tc.client, code)
		}
		if code := connectStatus(h, tc.neighbour); code == http.StatusTooManyRequests {
			t.Fatalf("connect from %s, next to %s: 429, want its own count", tc.neighbour, tc.client)
		}
	}
}

// Bad tickets lock out an IPv6 client's whole /64.
func TestBadTicketLockoutCountsIPv6By64(t *testing.T) {
	_, srv := startHostAt(t, Config{Limits: Limits{Failures: 2}})
	for _, addr := range []string{"[2001:db8:1:2::1]:4000", "[2001:db8:1:2::2]:4000"} {
		c, code := dialFrom(t, playtest.PlayURL(srv.URL, "ticket=forged"), addr)
		if c == nil {
			t.Fatalf("connect from %s refused with %d before any failure counted", addr, code)
		}
		c.Hello("new")
		if code := c.CloseCode(); code != StatusBadTicket {
			t.Fatalf("forged ticket closed with %d, want %d", code, StatusBadTicket)
		}
	}
	if c, code := dialFrom(t, playtest.PlayURL(srv.URL, "ticket=forged"), "[2001:db8:1:2::3]:4000"); c != nil || code != http.StatusTooManyRequests {
		t.Fatalf("connect from 2001:db8:1:2::3 after 2 bad tickets from its /64: %d, want 429", code)
	}
	if c, _ := dialFrom(t, playtest.PlayURL(srv.URL, "ticket=forged"), "[2001:db8:1:3::1]:4000"); c == nil {
		t.Fatal("connect from the next /64 refused: its lockout is its own")
	}
}

// One address holds at most Limits.Open connections open at once on a
// server, an IPv6 client by its /64: one more is refused with 429, as a
// connect over the rate is. Once one of them ends, whether after its
// hello or before, the address may open another.
func TestOpenConnectionsCappedPerAddress(t *testing.T) {
	h, srv := startHostAt(t, Config{Limits: Limits{Open: 2}})
	connect := func(id, addr string) (*playtest.Conn, int) {
		t.Helper()
		tk, _ := h.Tickets().Issue(id)
		c, code := dialFrom(t, playtest.PlayURL(srv.URL, "ticket="+tk), addr)
		if c != nil {
			c.Welcome("new")
		}
		return c, code
	}
	a1, _ := connect("a1", "[2001:db8:1:2::1]:4000")
	if c, code := connect("a2", "[2001:db8:1:2::2]:4000"); c == nil {
		t.Fatalf("second connection from 2001:db8:1:2::/64 refused with %d under a cap of 2", code)
	}
	if c, code := connect("a3", "[2001:db8:1:2::3]:4000"); c != nil || code != http.StatusTooManyRequests {
		t.Fatalf("third connection from 2001:db8:1:2::/64 held open at once: %d, want 429", code)
	}
	if c, code := connect("b1", "[2001:db8:1:3::1]:4000"); c == nil {
		t.Fatalf("connection from the next /64 refused with %d: its cap is its own", code)
	}
	a1.Close(websocket.StatusNormalClosure, "")
	testrun.WaitFor(t, "the closed connection is let go", func() bool { return h.limits.held("2001:db8:1:2::9") == 1 })
	if c, code := connect("a3", "[2001:db8:1:2::3]:4000"); c == nil {
		t.Fatalf("connection from 2001:db8:1:2::/64 after one of its two closed refused with %d", code)
	}
	// A connection that ends at its hello is let go too.
	bad, _ := dialFrom(t, playtest.PlayURL(srv.URL, "ticket=forged"), "[2001:db8:1:3::2]:4000")
	bad.Hello("new")
	if code := bad.CloseCode(); code != StatusBadTicket {
		t.Fatalf("forged ticket closed with %d, want %d", code, StatusBadTicket)
	}
	testrun.WaitFor(t, "the refused hello is let go", func() bool { return h.limits.held("2001:db8:1:3::") == 1 })
}

// Limits.Open math.MaxInt caps nothing.
func TestOpenConnectionsUncapped(t *testing.T) {
	h, srv := startHostAt(t, Config{Limits: Limits{Open: math.MaxInt}})
	for i := range 3 {
		tk, _ := h.Tickets().Issue(fmt.Sprint("p", i))
		if c, code := dialFrom(t, playtest.PlayURL(srv.URL, "ticket="+tk), "192.0.2.1:4000"); c == nil {
			t.Fatalf("connection %d from one address refused with %d without a cap", i+1, code)
		}
	}
}
