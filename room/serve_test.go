package room

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/relay"
)

// redirecting is the counter game with a redirect packet.
type redirecting struct{ *counter }

type redirectPacket struct {
	Type   string `json:"type"`
	Node   string `json:"node"`
	Param  string `json:"param"`
	Reason string `json:"reason"`
}

func (redirecting) Redirect(r Redirect) Packet {
	return redirectPacket{Type: "redirect", Node: r.NodeID, Param: r.NodeParam, Reason: r.Reason}
}

func startHost(t *testing.T, cfg Config) (*Host[*csim, int, *cplayer], *httptest.Server) {
	t.Helper()
	h := newHost(t, newCounter(), cfg)
	runHost(t, h)
	srv := newServer(t, h)
	return h, srv
}

func TestBadInputCloseCodes(t *testing.T) {
	h, srv := startHost(t, Config{ReadLimit: 1024})
	ticket := func() string {
		tk, err := h.Tickets().Issue("p1")
		if err != nil {
			t.Fatal(err)
		}
		return "ticket=" + tk
	}
	hello := `{"type":"hello","data":{"mode":"new"}}`
	cases := []struct {
		name   string
		query  string
		frames []string
		want   websocket.StatusCode
	}{
		{"malformed json hello", ticket(), []string{`{"type":`}, StatusBadHello},
		{"unknown hello mode", ticket(), []string{`{"type":"hello","data":{"mode":"spectate"}}`}, StatusBadHello},
		{"not a hello", ticket(), []string{`{"type":"input","data":1}`}, StatusBadHello},
		{"hello without ticket", "", []string{hello}, StatusBadTicket},
		{"forged ticket", "ticket=AAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAA", []string{hello}, StatusBadTicket},
		{"malformed json after hello", ticket(), []string{hello, `{{{`}, StatusBadPacket},
		{"bad input body", ticket(), []string{hello, `{"type":"input","data":"x"}`}, StatusBadPacket},
		{"unknown packet type", ticket(), []string{hello, `{"type":"teleport","data":{}}`}, StatusUnknownType},
		{"oversized frame", ticket(), []string{hello, `{"type":"input","data":"` + strings.Repeat("x", 2048) + `"}`}, websocket.StatusMessageTooBig},
		{"hello twice", ticket(), []string{hello, hello}, StatusBadPacket},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := playtest.DialPlay(t, srv.URL, tc.query)
			for _, f := range tc.frames {
				c.Write(t.Context(), websocket.MessageText, []byte(f)) // may fail once closed
			}
			if got := c.CloseCode(); got != tc.want {
				t.Fatalf("close code %d, want %d", got, tc.want)
			}
		})
	}
	// The server and other players are unaffected.
	c := playtest.DialPlay(t, srv.URL, ticket())
	c.SendText(hello)
	if m := c.Next("welcome"); m["player"] != "p1" {
		t.Fatalf("welcome %v", m)
	}
}

func TestTicketsOnceAcrossFleet(t *testing.T) {
	c := fleettest.Start(t, 2, func(_ int, cfg *fleet.Config) { cfg.Heartbeat = 100 * time.Millisecond })
	var hosts []*Host[*csim, int, *cplayer]
	for _, s := range c.Servers {
		h := newHost(t, newCounter(), Config{Secret: "shared"})
		h.UseFleet(s.Fleet)
		hosts = append(hosts, h)
	}
	ctx := t.Context()
	tk, err := hosts[0].Tickets().Issue("p1")
	if err != nil {
		t.Fatal(err)
	}
	if id, err := hosts[0].Tickets().Redeem(ctx, tk); err != nil || id != "p1" {
		t.Fatalf("redeem on A: %q, %v", id, err)
	}
	if _, err := hosts[1].Tickets().Redeem(ctx, tk); !errors.Is(err, ErrTicket) {
		t.Fatalf("redeem on B of a ticket redeemed on A: %v, want ErrTicket", err)
	}

	expired, err := hosts[0].Tickets().Issue("p2")
	if err != nil {
		t.Fatal(err)
	}
	hosts[1].tickets.now = func() time.Time { return time.Now().Add(31 * time.Second) }
	if _, err := hosts[1].Tickets().Redeem(ctx, expired); !errors.Is(err, ErrTicket) {
		t.Fatalf("redeem of an expired ticket: %v, want ErrTicket", err)
	}
}

// twoServers runs hosts A and B, each behind its relay, on one fleet.
func twoServers(t *testing.T, game func() Game[*csim, int, *cplayer]) (a, b *Host[*csim, int, *cplayer], urlA string) {
	a, b, urlA, _, _ = twoServersB(t, game)
	return a, b, urlA
}

// twoServersB is twoServers that also returns B's HTTP server and the
// fleet's servers.
func twoServersB(t *testing.T, game func() Game[*csim, int, *cplayer]) (a, b *Host[*csim, int, *cplayer], urlA string, srvB *httptest.Server, c *fleettest.Cluster) {
	t.Helper()
	two := startTwo(t, game, Config{Secret: "shared", MoveCooldown: time.Nanosecond})
	return two.hosts[0], two.hosts[1], two.srvs[0].URL, two.srvs[1], two.c
}

// twoHosts is two hosts on one fleet, each behind its relay on an HTTP
// server of its own.
type twoHosts struct {
	hosts  [2]*Host[*csim, int, *cplayer]
	relays [2]*relay.Relay
	srvs   [2]*httptest.Server
	c      *fleettest.Cluster
}

// startTwo starts two hosts of game with cfg, and returns once their
// servers see each other. Everything stops when the test ends.
func startTwo(t *testing.T, game func() Game[*csim, int, *cplayer], cfg Config) *twoHosts {
	t.Helper()
	return startTwoWith(t, game, cfg, nil)
}

// startTwoWith is startTwo with the modules that modules (when not nil)
// returns for host i.
func startTwoWith(t *testing.T, game func() Game[*csim, int, *cplayer], cfg Config, modules func(i int) []Module) *twoHosts {
	t.Helper()
	two := &twoHosts{srvs: [2]*httptest.Server{httptest.NewUnstartedServer(nil), httptest.NewUnstartedServer(nil)}}
	two.c = fleettest.Start(t, 2, func(i int, fc *fleet.Config) {
		fc.Heartbeat = 100 * time.Millisecond
		fc.InternalAddress = two.srvs[i].Listener.Addr().String()
	})
	for i, s := range two.c.Servers {
		h := newHost(t, game(), cfg)
		if modules != nil {
			for _, m := range modules(i) {
				if err := h.Use(m); err != nil {
					t.Fatal(err)
				}
			}
		}
		h.UseServer(s.Fleet)
		h.UseFleet(s.Fleet)
		runHost(t, h)
		rl, err := relay.New(relay.Config{NodeID: s.ID(), Secret: "shared relay secret, long enough"}, s.Fleet, quietLog)
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/play", h.Handler())
		srv := two.srvs[i]
		srv.Config.Handler = rl.Middleware(mux)
		srv.Start()
		t.Cleanup(func() { srv.Close(); rl.Close() })
		two.hosts[i], two.relays[i] = h, rl
	}
	testrun.WaitFor(t, "the servers to see each other", func() bool { return !two.c.Servers[0].Alone() && !two.c.Servers[1].Alone() })
	return two
}

func TestRejoinFromAnywhere(t *testing.T) {
	a, b, urlA := twoServers(t, func() Game[*csim, int, *cplayer] { return redirecting{newCounter()} })
	if _, err := b.OpenRoom(t.Context(), Info{ID: "match", Players: []string{"p1"}}); err != nil {
		t.Fatal(err)
	}
	// p1 reconnects through the load balancer and lands on A.
	c := playtest.DialPlayer(t, urlA, a.Tickets(), "p1", "")
	if m := c.Welcome("rejoin"); m["node"] != "s0" || m["room"] != nil {
		t.Fatalf("welcome on A: %v", m)
	}
	rd := c.Next("redirect")
	if rd["node"] != "s1" || rd["param"] != "node" || rd["reason"] != ReasonRejoin {
		t.Fatalf("redirect %v", rd)
	}
	if code := c.CloseCode(); code != StatusRedirected {
		t.Fatalf("close after redirect: %d", code)
	}

	// It follows the redirect: same public address, ?node=s1, relayed by A.
	c = playtest.DialPlayer(t, urlA, a.Tickets(), "p1", "node=s1")
	if m := c.Welcome("rejoin"); m["node"] != "s1" || m["room"] != "match" {
		t.Fatalf("welcome through the relay: %v; want its seat in match on s1", m)
	}
	c.SendText(`{"type":"input","data":5}`)
	testrun.WaitFor(t, "the seat taken back through the relay takes inputs", func() bool {
		r, _ := b.Room("match")
		return r != nil && slices.Contains(b.game.(redirecting).lines("match"), "input p1 5")
	})
}

// TestArrivalIsOneRoundTrip: finding where an arriving player plays and
// taking its handoff is one backplane call (a handoff found is confirmed
// with a second, which this test does not count); a player sent on to its
// seat elsewhere takes its handoff along. Each connection also claims the
// player's connection (fleet.KindConn), one Claim call.
func TestArrivalIsOneRoundTrip(t *testing.T) {
	a, b, urlA, _, fl := twoServersB(t, func() Game[*csim, int, *cplayer] { return redirecting{newCounter()} })
	bpA := fl.Servers[0].Backplane
	calls := func() map[string]int {
		m := map[string]int{}
		for _, op := range []string{"Arrive", "Locate", "TakeHandoff", "PutHandoff", "Claim"} {
			m[op] = bpA.Calls(op)
		}
		return m
	}
	arrive := func(id, mode string) *playtest.Conn {
		c := playtest.DialPlayer(t, urlA, a.Tickets(), id, "")
		c.SendText(`{"type":"hello","data":{"mode":"` + mode + `"}}`)
		c.Next("welcome")
		return c
	}

	// A newcomer: one call.
	before := calls()
	arrive("newcomer", "new")
	testrun.WaitFor(t, "the newcomer's arrival makes an Arrive call", func() bool { return bpA.Calls("Arrive") != before["Arrive"] })
	want := map[string]int{"Arrive": 1, "Locate": 0, "TakeHandoff": 0, "PutHandoff": 0, "Claim": 1}
	for op, n := range calls() {
		if n-before[op] != want[op] {
			t.Errorf("a newcomer's arrival made %d %s calls, want %d", n-before[op], op, want[op])
		}
	}

	// A player seated on B arrives on A with a queue place for A: it is
	// sent to its seat, and its place goes with it.
	if _, err := b.OpenRoom(t.Context(), Info{ID: "match", Players: []string{"p1"}}); err != nil {
		t.Fatal(err)
	}
	srvB := b.fleet.(*fleet.Fleet)
	place := []byte(`{"kind":"queue","data":{"waited":4200}}`)
	if err := srvB.PutHandoff(t.Context(), "s0", "p1", place); err != nil {
		t.Fatal(err)
	}
	before = calls()
	c := arrive("p1", "rejoin")
	if rd := c.Next("redirect"); rd["node"] != "s1" || rd["reason"] != ReasonRejoin {
		t.Fatalf("redirect %v", rd)
	}
	want = map[string]int{"Arrive": 1, "Locate": 0, "TakeHandoff": 0, "PutHandoff": 1, "Claim": 1}
	for op, n := range calls() {
		if n-before[op] != want[op] {
			t.Errorf("a rejoin's arrival made %d %s calls, want %d", n-before[op], op, want[op])
		}
	}
	if got, err := srvB.TakeHandoff(t.Context(), "p1"); err != nil || string(got) != string(place) {
		t.Errorf("handoff waiting for p1 on s1: %q, %v; want the one it brought", got, err)
	}
}

// noMoves is the counter game opted out of moves.
type noMoves struct{ *counter }

func (noMoves) Redirect(Redirect) Packet { return nil }

func TestNilRedirectMovesNobody(t *testing.T) {
	a, b, urlA := twoServers(t, func() Game[*csim, int, *cplayer] { return noMoves{newCounter()} })
	if _, err := b.OpenRoom(t.Context(), Info{ID: "match", Players: []string{"p1"}}); err != nil {
		t.Fatal(err)
	}
	c := playtest.DialPlayer(t, urlA, a.Tickets(), "p1", "")
	if m := c.Welcome("rejoin"); m["node"] != "s0" {
		t.Fatalf("welcome: %v", m)
	}
	// Nothing else comes: no redirect, and the connection stays open.
	if err := c.Quiet(300 * time.Millisecond); err != nil {
		t.Fatalf("after welcome: %v; want nothing", err)
	}
}

func TestDrainingServerSendsNewcomersAway(t *testing.T) {
	a, b, urlA := twoServers(t, func() Game[*csim, int, *cplayer] { return redirecting{newCounter()} })
	srvA := a.fleet.(*fleet.Fleet)
	// b must look ready with room in a's view: fleettest marks it ready.
	if _, err := a.OpenRoom(t.Context(), Info{ID: "last", Players: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	drained := make(chan error)
	go func() { drained <- srvA.Drain(context.Background()) }() // waits for "last" to end
	testrun.WaitFor(t, "the drain", srvA.Draining)
	// The newcomer was sent here with a handoff (a queue place) by a server
	// whose view had not seen the drain yet: it carries it on.
	srvB := b.fleet.(*fleet.Fleet)
	place := []byte(`{"kind":"queue","data":{"waited":4200}}`)
	if err := srvB.PutHandoff(t.Context(), "s0", "newcomer", place); err != nil {
		t.Fatal(err)
	}
	c := playtest.DialPlayer(t, urlA, a.Tickets(), "newcomer", "")
	c.Welcome("new")
	if rd := c.Next("redirect"); rd["node"] != "s1" || rd["reason"] != ReasonDrain {
		t.Fatalf("newcomer of a draining server got %v, want a drain redirect to s1", rd)
	}
	if got, err := srvB.TakeHandoff(t.Context(), "newcomer"); err != nil || string(got) != string(place) {
		t.Errorf("handoff waiting for the newcomer on s1: %q, %v; want the one it brought", got, err)
	}
	if r, ok := a.Room("last"); ok {
		r.End("done")
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
}

// TestNoRedirectBackToUnreachableNode: a client that asked for its room's
// server but was served here (the relay could not reach it) is not sent
// back there, which would loop until the dead server leaves the registry.
func TestNoRedirectBackToUnreachableNode(t *testing.T) {
	a, b, urlA, srvB, _ := twoServersB(t, func() Game[*csim, int, *cplayer] { return redirecting{newCounter()} })
	if _, err := b.OpenRoom(t.Context(), Info{ID: "match", Players: []string{"p1"}}); err != nil {
		t.Fatal(err)
	}
	srvB.Close() // b's fleet still heartbeats and holds p1: a dying server

	c := playtest.DialPlayer(t, urlA, a.Tickets(), "p1", "node=s1")
	if m := c.Welcome("rejoin"); m["node"] != "s0" {
		t.Fatalf("welcome %v; want it served on s0", m)
	}
	if err := c.Quiet(300 * time.Millisecond); err != nil {
		t.Fatalf("after welcome: %v; want no redirect back to the unreachable s1", err)
	}

	// Without ?node= the client is still sent to s1, where its seat is.
	c = playtest.DialPlayer(t, urlA, a.Tickets(), "p1", "")
	c.Hello("rejoin")
	if rd := c.Next("redirect"); rd["node"] != "s1" {
		t.Fatalf("redirect %v", rd)
	}
}

// TestClientThatStopsReadingIsCut: a client that never reads while the
// server sends to it is disconnected once its queue is full, promptly,
// and the others are not held back.
func TestClientThatStopsReadingIsCut(t *testing.T) {
	h, srv := startHost(t, Config{SendQueue: 4})
	deaf := playtest.DialPlayer(t, srv.URL, h.Tickets(), "deaf", "")
	deaf.Hello("new")
	var c *Client
	testrun.WaitFor(t, "the deaf client is registered", func() bool {
		c, _ = h.Client("deaf")
		return c != nil
	})
	deadline := time.Now().Add(5 * time.Second)
	big := strings.Repeat("x", 64<<10) // fills the socket buffers quickly
	for !isDone(c) {
		c.Send(map[string]string{"type": "state", "pad": big})
		if time.Now().After(deadline) {
			t.Fatal("a client that does not read was never cut off")
		}
	}
	// The host forgets it without waiting for write timeouts.
	testrun.WaitWithin(t, 3*time.Second, "the cut-off client is forgotten", func() bool {
		_, ok := h.Client("deaf")
		return !ok
	})
}

func isDone(c *Client) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

// TestClientThatStopsReadingFailsPing: a client that stops reading while
// only small frames are sent (the socket buffers would take minutes to
// fill) is cut when it does not answer a ping.
func TestClientThatStopsReadingFailsPing(t *testing.T) {
	h, srv := startHost(t, Config{PingInterval: 100 * time.Millisecond})
	deaf := playtest.DialPlayer(t, srv.URL, h.Tickets(), "deaf", "")
	deaf.Hello("new")
	// deaf never reads again: it answers no ping. It is cut within a
	// ping interval, another for the answer, and the close handshake's
	// wait for an answer to the close frame (5 s); the deadline only
	// bounds a hung test.
	deadline := time.Now().Add(20 * time.Second)
	registered := false
	for {
		_, ok := h.Client("deaf")
		if ok {
			registered = true
		}
		if registered && !ok {
			return // cut
		}
		if time.Now().After(deadline) {
			t.Fatalf("a client that does not read is still connected (registered %v)", registered)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
