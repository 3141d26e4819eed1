package room

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// A player who sends leave is told its room ended for it (room_end,
// reason "left"), as the protocol promises, and hears nothing more of the
// room; a room whose last seated player left ends (ReasonAbandoned),
// rather than running empty until the server stops.
func TestLeaveEndsTheRoomForThePlayerAndTheLastLeaveEndsIt(t *testing.T) {
	g := &ender{counter: newCounter(), ended: make(chan struct{}, 10)}
	h := newHost(t, g, Config{})
	runHost(t, h)
	srv := newServer(t, h)
	if _, err := h.OpenRoom(t.Context(), Info{ID: "r", Players: []string{"p1", "p2"}}); err != nil {
		t.Fatal(err)
	}
	conns := map[string]*playtest.Conn{}
	for _, id := range []string{"p1", "p2"} {
		c := playtest.DialPlayer(t, srv.URL, h.Tickets(), id, "")
		if m := c.Welcome("rejoin"); m["room"] != "r" {
			t.Fatalf("welcome %v, want the room r", m)
		}
		conns[id] = c
	}

	conns["p1"].SendText(`{"type":"leave"}`)
	if m := conns["p1"].Next("room_end"); m["room"] != "r" || m["reason"] != ReasonLeft {
		t.Fatalf("room_end %v, want room r, reason %q", m, ReasonLeft)
	}
	if h.RoomOf("p1") != "" || h.RoomOf("p2") != "r" {
		t.Fatalf("after p1's leave: p1 in %q, p2 in %q", h.RoomOf("p1"), h.RoomOf("p2"))
	}
	if _, ok := h.Room("r"); !ok {
		t.Fatal("the room ended while p2 was still seated")
	}

	conns["p2"].SendText(`{"type":"leave"}`)
	if m := conns["p2"].Next("room_end"); m["room"] != "r" || m["reason"] != ReasonLeft {
		t.Fatalf("room_end %v, want room r, reason %q", m, ReasonLeft)
	}
	<-g.ended
	if got, want := g.seen(), []string{"r " + ReasonAbandoned + " "}; !slices.Equal(got, want) {
		t.Fatalf("ends %q, want %q", got, want)
	}
	testrun.WaitFor(t, "the room is closed after its last player left", func() bool {
		_, ok := h.Room("r")
		return !ok
	})
	// Neither is told of the room again: the next thing each reads is the
	// close its own unknown packet earns.
	for id, c := range conns {
		c.SendText(`{"type":"nothing"}`)
		if m, err := c.Receive(); websocket.CloseStatus(err) != StatusUnknownType {
			t.Fatalf("%s: after its room_end: %v %v, want the close %d", id, m, err, StatusUnknownType)
		}
	}
}

// A late joiner is not seated in a room that is ending: Seat refuses a
// room whose end was asked (its last player left, or the game called
// End) as it refuses one that has ended, instead of seating a player the
// end of the pass then drops without its Join.
func TestSeatRefusesARoomThatIsEnding(t *testing.T) {
	g := &ender{counter: newCounter(), ended: make(chan struct{}, 10)}
	h := newHost(t, g, Config{})
	seated := make(chan error, 1)
	var once sync.Once
	g.onStep = func(r *Room[*csim, int, *cplayer]) {
		if r.ID() != "r" || len(r.Players()) > 0 {
			return
		}
		// p1's leave has just been applied, in this pass.
		once.Do(func() {
			done := make(chan error)
			go func() { done <- h.Seat(context.Background(), "r", "p2") }()
			seated <- <-done
		})
	}
	runHost(t, h)
	if _, err := h.OpenRoom(t.Context(), Info{ID: "r", Players: []string{"p1"}}); err != nil {
		t.Fatal(err)
	}
	h.Unseat("p1")
	if err := <-seated; !errors.Is(err, ErrClosed) {
		t.Fatalf("Seat in a room whose last player left: %v, want ErrClosed", err)
	}
	<-g.ended
	if got, want := g.seen(), []string{"r " + ReasonAbandoned + " "}; !slices.Equal(got, want) {
		t.Fatalf("ends %q, want %q", got, want)
	}
	if id := h.RoomOf("p2"); id != "" {
		t.Fatalf("p2 is in %q", id)
	}
}
