package room

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/fleet"
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
	tk, _ := a.Tickets().Issue("p1")
	c := dial(t, wsURL(urlA, "ticket="+tk))
	send(t, c, `{"type":"hello","data":{"mode":"rejoin"}}`)
	if m := readUntil(t, c, "welcome"); m["room"] != "last" {
		t.Fatalf("welcome %v, want the seat in last", m)
	}

	srvA := a.fleet.(*fleet.Fleet)
	drained := make(chan error)
	go func() { drained <- srvA.Drain(context.Background()) }() // waits for "last" to end
	waitFor(t, "the drain", srvA.Draining)
	end.Store(true)
	if m := readUntil(t, c, "room_end"); m["room"] != "last" {
		t.Fatalf("room_end %v", m)
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	// The drain is over. A packet of an unknown type closes the connection
	// with 4003 if it is still open: a redirect must have come first.
	c.Write(t.Context(), websocket.MessageText, []byte(`{"type":"nonsense"}`))
	m, err := read(t, c)
	if err != nil {
		t.Fatalf("p1, roomless on a server that finished its drain, got %v; want a drain redirect to s1", err)
	}
	if m["type"] != "redirect" || m["node"] != "s1" || m["reason"] != ReasonDrain {
		t.Fatalf("p1, roomless on a server that finished its drain, got %v; want a drain redirect to s1", m)
	}
	if code := closeCode(t, c); code != StatusRedirected {
		t.Fatalf("close after the redirect: %d, want %d", code, StatusRedirected)
	}

	// The server leaves next: a newcomer (p1 following the redirect,
	// given this server again by a round-robin load balancer) is refused
	// before the upgrade, so that the load balancer tries another server,
	// not welcomed and then cut when the host stops.
	tk, _ = a.Tickets().Issue("p1")
	_, resp, err := websocket.Dial(t.Context(), wsURL(urlA, "ticket="+tk), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("newcomer after the drain: %v, %v; want 503 before the upgrade", resp, err)
	}
}
