package room

import (
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// TestRelayCutThenRoomEnds is the drain's "lost" match: a player whose
// room runs on B is connected through A (a load balancer gave it A, which
// relays it to B); A finishes its drain and exits, which cuts the relayed
// connection with 1001 "server closing"; the room on B ends before the
// player is back. Back on B (it names B, as clients name the server they
// were on), the player gets the room's end after the welcome: the match
// is not lost.
func TestRelayCutThenRoomEnds(t *testing.T) {
	var end atomic.Bool
	two := startTwo(t, func() Game[*csim, int, *cplayer] {
		g := newCounter()
		g.onStep = func(r *Room[*csim, int, *cplayer]) {
			if end.Load() {
				r.End("won by p2")
			}
		}
		return redirecting{g}
	}, Config{Secret: "shared"})
	a, b, srvs := two.hosts[0], two.hosts[1], two.srvs
	if _, err := b.OpenRoom(t.Context(), Info{ID: "m", Players: []string{"p1", "p2"}}); err != nil {
		t.Fatal(err)
	}
	connect := func(url, id string) *playtest.Conn {
		t.Helper()
		conn := playtest.DialPlayer(t, url, a.Tickets(), id, "node=s1")
		if m := conn.Welcome("rejoin"); m["node"] != "s1" || m["room"] != "m" {
			t.Fatalf("%s's welcome %v, want its seat in m on s1", id, m)
		}
		return conn
	}
	p1 := connect(srvs[0].URL, "p1") // through A's relay
	p2 := connect(srvs[1].URL, "p2")

	// A exits: its relay cuts p1's connection.
	closed := make(chan struct{})
	go func() { two.relays[0].Close(); close(closed) }() // waits for p1's answer to its close
	if _, err := p1.Receive(); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("p1 through A's relay: %v, want 1001 when A's relay stops", err)
	}
	<-closed
	testrun.WaitFor(t, "p1 away on B", func() bool { return !b.Connected("p1") })
	end.Store(true)
	p2.Next("room_end")

	// p1 is back, on B.
	p1 = playtest.DialPlayer(t, srvs[1].URL, b.Tickets(), "p1", "node=s1")
	if m := p1.Welcome("rejoin"); m["room"] != nil {
		t.Fatalf("p1's welcome on B %v, want no room", m)
	}
	p1.SendText(`{"type":"nonsense"}`) // answered by a close: what came before it is all
	m, err := p1.Receive()
	if err != nil || m["type"] != "room_end" || m["room"] != "m" || m["reason"] != "won by p2" {
		t.Fatalf("p1 back on B got %v, %v; want room_end for m, won by p2 (else its client counts the match lost)", m, err)
	}
}
