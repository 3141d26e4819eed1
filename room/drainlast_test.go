package room

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// TestDrainSendsTheRestAway: a player still connected to a draining server
// when its drain is over, in no room (its room just ended, as the last
// rooms' players are), is sent to another server (redirect, reason drain)
// before the server leaves, not cut with 1001 when it stops: a draining
// server loses nobody, and a queue message the player sends right after
// its room's end is not lost in a dropped connection.
func TestDrainSendsTheRestAway(t *testing.T) {
	var end atomic.Bool
	a, _, urlA := twoServers(t, func() Game[*csim, int, *cplayer] {
		g := newCounter()
		g.onStep = func(r *Room[*csim, int, *cplayer]) {
			if end.Load() {
				r.End("won by p1")
			}
		}
		return redirecting{g}
	})
	if _, err := a.OpenRoom(t.Context(), Info{ID: "last", Players: []string{"p1"}}); err != nil {
		t.Fatal(err)
	}
	c := playtest.DialPlayer(t, urlA, a.Tickets(), "p1", "")
	if m := c.Welcome("rejoin"); m["room"] != "last" {
		t.Fatalf("welcome %v, want the seat in last", m)
	}

	srvA := a.fleet.(*fleet.Fleet)
	drained := make(chan error)
	go func() { drained <- srvA.Drain(context.Background()) }() // waits for "last" to end
	testrun.WaitFor(t, "the drain", srvA.Draining)
	end.Store(true)
	if m := c.Next("room_end"); m["room"] != "last" {
		t.Fatalf("room_end %v", m)
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	// The drain is over. A packet of an unknown type closes the connection
	// with 4003 if it is still open: a redirect must have come first.
	c.Write(t.Context(), websocket.MessageText, []byte(`{"type":"nonsense"}`))
	m, err := c.Receive()
	if err != nil {
		t.Fatalf("p1, roomless on a server that finished its drain, got %v; want a drain redirect to s1", err)
	}
	if m["type"] != "redirect" || m["node"] != "s1" || m["reason"] != ReasonDrain {
		t.Fatalf("p1, roomless on a server that finished its drain, got %v; want a drain redirect to s1", m)
	}
	if code := c.CloseCode(); code != StatusRedirected {
		t.Fatalf("close after the redirect: %d, want %d", code, StatusRedirected)
	}

	// The server leaves next: a newcomer (p1 following the redirect,
	// given this server again by a round-robin load balancer) is refused
	// before the upgrade, so that the load balancer tries another server,
	// not welcomed and then cut when the host stops.
	tk, _ := a.Tickets().Issue("p1")
	if _, status, err := playtest.TryDial(t, playtest.PlayURL(urlA, "ticket="+tk), nil); status != http.StatusServiceUnavailable {
		t.Fatalf("newcomer after the drain: %d, %v; want 503 before the upgrade", status, err)
	}
}

// keeper is a module that keeps the players who say "keep" (a queue of
// its own) and gives them up at a drain's end with a handoff of theirs.
type keeper struct {
	env ModuleHost

	mu   sync.Mutex
	kept map[string]bool
}

func (k *keeper) Attach(h ModuleHost) error { k.env = h; return nil }

func (k *keeper) MessageTypes() []string { return []string{"keep"} }

func (k *keeper) HandleMessage(_ context.Context, c *Client, _ string, _ []byte) error {
	k.mu.Lock()
	k.kept[c.ID()] = true
	k.mu.Unlock()
	c.Send(map[string]string{"type": "kept"})
	return nil
}

func (k *keeper) Release(id string) (*Handoff, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.kept[id] {
		return nil, false
	}
	delete(k.kept, id)
	return &Handoff{Kind: "keep", Data: []byte(id)}, false
}

// TestDrainingServerServesNewcomers: a newcomer of a draining server that
// brought nothing is served: what it sends right after its welcome is
// read and handled, not lost with a connection closed at once by a
// redirect. At the drain's end it is sent away with what the module kept
// of it.
func TestDrainingServerServesNewcomers(t *testing.T) {
	keepers := [2]*keeper{{kept: map[string]bool{}}, {kept: map[string]bool{}}}
	two := startTwoWith(t, func() Game[*csim, int, *cplayer] { return redirecting{newCounter()} },
		Config{Secret: "shared", MoveCooldown: time.Nanosecond},
		func(i int) []Module { return []Module{keepers[i]} })
	a, urlA := two.hosts[0], two.srvs[0].URL
	srvA, srvB := two.c.Servers[0].Fleet, two.c.Servers[1].Fleet
	if _, err := a.OpenRoom(t.Context(), Info{ID: "last", Players: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	drained := make(chan error)
	go func() { drained <- srvA.Drain(context.Background()) }() // waits for "last" to end
	testrun.WaitFor(t, "the drain", srvA.Draining)

	c := playtest.DialPlayer(t, urlA, a.Tickets(), "newcomer", "")
	if m := c.Welcome("new"); m["node"] != "s0" {
		t.Fatalf("welcome %v, want s0", m)
	}
	c.SendText(`{"type":"keep"}`) // right after the welcome
	if m, err := c.Receive(); err != nil || m["type"] != "kept" {
		t.Fatalf("after keep: %v, %v; want it kept on the draining server", m, err)
	}

	if r, ok := a.Room("last"); ok {
		r.End("done")
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	if rd := c.Next("redirect"); rd["node"] != "s1" || rd["reason"] != ReasonDrain {
		t.Fatalf("newcomer at the drain's end got %v, want a drain redirect to s1", rd)
	}
	data, err := srvB.TakeHandoff(t.Context(), "newcomer")
	var ho Handoff
	if err != nil || json.Unmarshal(data, &ho) != nil || ho.Kind != "keep" || string(ho.Data) != "newcomer" {
		t.Fatalf("handoff for the newcomer on s1: %q, %v; want the keeper's", data, err)
	}
}
