package room

import (
	"testing"

	"github.com/muster-gg/muster/internal/testkit/playtest"
)

// clientRoomAtEnd is a RoomWatcher that, when a room ends, reports the
// room its player's connection then says it is in.
type clientRoomAtEnd struct {
	h   *Host[*csim, int, *cplayer]
	id  string
	got chan string
}

func (w *clientRoomAtEnd) RoomChanged(s RoomState) {
	if !s.Ended {
		return
	}
	w.h.mu.Lock()
	c := w.h.clients[w.id]
	w.h.mu.Unlock()
	w.got <- c.Room()
}

// Once the host has forgotten an ended room (the drain counts it gone, a
// watcher is told), its players' connections are in no room: a drain's
// last part, which sends away the players seated nowhere, skipped one
// whose connection still named the ended room and left it behind on a
// server about to stop (TestDrainSendsTheRestAway, under load).
func TestEndedRoomsPlayersAreRoomless(t *testing.T) {
	h := newHost(t, newCounter(), Config{})
	w := &clientRoomAtEnd{h: h, id: "p1", got: make(chan string, 1)}
	h.AddRoomWatcher(w)
	runHost(t, h)
	srv := newServer(t, h)
	r, err := h.OpenRoom(t.Context(), Info{ID: "last", Players: []string{"p1"}})
	if err != nil {
		t.Fatal(err)
	}
	c := playtest.DialPlayer(t, srv.URL, h.Tickets(), "p1", "")
	if m := c.Welcome("rejoin"); m["room"] != "last" {
		t.Fatalf("welcome %v, want the seat in last", m)
	}
	r.End("over")
	if room := <-w.got; room != "" {
		t.Fatalf("p1's connection is in room %q once the host forgot it ended, want in none", room)
	}
}
