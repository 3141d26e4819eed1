package room

import (
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// TestRoomEndReachesPlayerWhoWasAway: a player whose connection dropped
// just before its room ended (a relaying server that finished its drain
// cut it, a network blip) is told how the room ended when it comes back to
// this server: the welcome names no room, and room_end follows it. Without
// it the player never learned the end: its client showed a frozen match
// (the duel's page) or counted the match as lost (the duel's bots, after
// a drain). A player that saw the end is not told again.
func TestRoomEndReachesPlayerWhoWasAway(t *testing.T) {
	var end atomic.Bool
	g := newCounter()
	g.onStep = func(r *Room[*csim, int, *cplayer]) {
		if end.Load() {
			r.End("won by p2")
		}
	}
	h := newHost(t, g, Config{})
	runHost(t, h)
	srv := newServer(t, h).URL
	if _, err := h.OpenRoom(t.Context(), Info{ID: "m", Players: []string{"p1", "p2"}}); err != nil {
		t.Fatal(err)
	}
	connect := func(id string) *playtest.Conn {
		t.Helper()
		c := playtest.DialPlayer(t, srv, h.Tickets(), id, "")
		c.Hello("rejoin")
		return c
	}
	p1 := connect("p1")
	if m := p1.Next("welcome"); m["room"] != "m" {
		t.Fatalf("p1's welcome %v, want its seat in m", m)
	}
	p2 := connect("p2")
	if m := p2.Next("welcome"); m["room"] != "m" {
		t.Fatalf("p2's welcome %v, want its seat in m", m)
	}

	// p1's connection drops; the room ends while p1 is away.
	p1.CloseNow()
	testrun.WaitFor(t, "p1 away", func() bool { return !h.Connected("p1") })
	end.Store(true)
	if m := p2.Next("room_end"); m["room"] != "m" || m["reason"] != "won by p2" {
		t.Fatalf("p2's room_end %v", m)
	}

	// p1 comes back: no seat, and the end it missed.
	p1 = connect("p1")
	if m := p1.Next("welcome"); m["room"] != nil {
		t.Fatalf("p1's welcome after the end %v, want no room", m)
	}
	// A packet of an unknown type closes the connection with 4003: what
	// the server sent before that answer is all it had to say.
	p1.SendText(`{"type":"nonsense"}`)
	m, err := p1.Receive()
	if err != nil {
		t.Fatalf("p1 back after its room ended got %v, want room_end for m", err)
	}
	if m["type"] != "room_end" || m["room"] != "m" || m["reason"] != "won by p2" {
		t.Fatalf("p1 back after its room ended got %v, want room_end for m, won by p2", m)
	}
	if code := p1.CloseCode(); code != StatusUnknownType {
		t.Fatalf("p1 closed with %d, want %d", code, StatusUnknownType)
	}

	// Told once: neither p1 nor p2 (which saw the end) hears of it again.
	for _, id := range []string{"p1", "p2"} {
		c := connect(id)
		c.Next("welcome")
		c.SendText(`{"type":"nonsense"}`)
		if m, err := c.Receive(); err == nil {
			t.Fatalf("%s reconnecting again got %v, want nothing before the close", id, m)
		} else if code := websocket.CloseStatus(err); code != StatusUnknownType {
			t.Fatalf("%s closed with %d, want %d", id, code, StatusUnknownType)
		}
	}
}
