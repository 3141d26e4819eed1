package room

import (
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
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
	h, err := New[*csim, int, *cplayer](g, Config{}, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	runHost(t, h)
	srv := startServe(t, h)
	if _, err := h.OpenRoom(t.Context(), Info{ID: "m", Players: []string{"p1", "p2"}}); err != nil {
		t.Fatal(err)
	}
	connect := func(id string) *websocket.Conn {
		t.Helper()
		tk, err := h.Tickets().Issue(id)
		if err != nil {
			t.Fatal(err)
		}
		c := dial(t, wsURL(srv, "ticket="+tk))
		send(t, c, `{"type":"hello","data":{"mode":"rejoin"}}`)
		return c
	}
	p1 := connect("p1")
	if m := readUntil(t, p1, "welcome"); m["room"] != "m" {
		t.Fatalf("p1's welcome %v, want its seat in m", m)
	}
	p2 := connect("p2")
	if m := readUntil(t, p2, "welcome"); m["room"] != "m" {
		t.Fatalf("p2's welcome %v, want its seat in m", m)
	}

	// p1's connection drops; the room ends while p1 is away.
	p1.CloseNow()
	waitFor(t, "p1 away", func() bool { return !h.Connected("p1") })
	end.Store(true)
	if m := readUntil(t, p2, "room_end"); m["room"] != "m" || m["reason"] != "won by p2" {
		t.Fatalf("p2's room_end %v", m)
	}

	// p1 comes back: no seat, and the end it missed.
	p1 = connect("p1")
	if m := readUntil(t, p1, "welcome"); m["room"] != nil {
		t.Fatalf("p1's welcome after the end %v, want no room", m)
	}
	// A packet of an unknown type closes the connection with 4003: what
	// the server sent before that answer is all it had to say.
	send(t, p1, `{"type":"nonsense"}`)
	m, err := read(t, p1)
	if err != nil {
		t.Fatalf("p1 back after its room ended got %v, want room_end for m", err)
	}
	if m["type"] != "room_end" || m["room"] != "m" || m["reason"] != "won by p2" {
		t.Fatalf("p1 back after its room ended got %v, want room_end for m, won by p2", m)
	}
	if code := closeCode(t, p1); code != StatusUnknownType {
		t.Fatalf("p1 closed with %d, want %d", code, StatusUnknownType)
	}

	// Told once: neither p1 nor p2 (which saw the end) hears of it again.
	for _, id := range []string{"p1", "p2"} {
		c := connect(id)
		readUntil(t, c, "welcome")
		send(t, c, `{"type":"nonsense"}`)
		if m, err := read(t, c); err == nil {
			t.Fatalf("%s reconnecting again got %v, want nothing before the close", id, m)
		} else if code := websocket.CloseStatus(err); code != StatusUnknownType {
			t.Fatalf("%s closed with %d, want %d", id, code, StatusUnknownType)
		}
	}
}

// startServe serves h's handler on a test server and returns its URL.
func startServe(t *testing.T, h *Host[*csim, int, *cplayer]) string {
	t.Helper()
	srv := httptest.NewServer(h.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// waitFor polls cond until it holds, failing after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: timed out", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
