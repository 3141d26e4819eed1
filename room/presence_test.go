package room

import (
	"testing"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/playtest"
)

// present is the counter game with the presence hooks, which report each
// call on seen.
type present struct {
	*counter
	seen chan string
}

func (g *present) PlayerAway(r *Room[*csim, int, *cplayer], p *cplayer) {
	g.seen <- "away " + p.id + " present " + boolWord(r.Present(p.id))
}

func (g *present) PlayerBack(r *Room[*csim, int, *cplayer], p *cplayer) {
	g.seen <- "back " + p.id + " present " + boolWord(r.Present(p.id))
}

func boolWord(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// awayWrongPlayer has PlayerAway taking the player's id, not its Player.
type awayWrongPlayer struct{ plain }

func (awayWrongPlayer) PlayerAway(*Room[*csim, int, *cplayer], string) {}

// A game hears that one seated player went away (its connection ended)
// and that it came back into its seat, on the room's worker, while the
// other player plays on: the seat is kept, the room does not end.
func TestPresenceHooksTellAGameOfOnePlayerAwayAndBack(t *testing.T) {
	g := &present{counter: newCounter(), seen: make(chan string, 10)}
	h := newHost(t, g, Config{})
	runHost(t, h)
	srv := newServer(t, h)
	if _, err := h.OpenRoom(t.Context(), Info{ID: "r", Players: []string{"p1", "p2"}}); err != nil {
		t.Fatal(err)
	}
	p1 := playtest.DialPlayer(t, srv.URL, h.Tickets(), "p1", "")
	p1.Welcome("rejoin")
	p2 := playtest.DialPlayer(t, srv.URL, h.Tickets(), "p2", "")
	p2.Welcome("rejoin")

	p1.Close(websocket.StatusNormalClosure, "gone a moment")
	if got, want := <-g.seen, "away p1 present no"; got != want {
		t.Fatalf("first presence call %q, want %q", got, want)
	}
	if id := h.RoomOf("p1"); id != "r" {
		t.Fatalf("away p1 is in %q, want its seat in r kept", id)
	}

	p1 = playtest.DialPlayer(t, srv.URL, h.Tickets(), "p1", "")
	if m := p1.Welcome("rejoin"); m["room"] != "r" {
		t.Fatalf("welcome %v, want p1 back in r", m)
	}
	if got, want := <-g.seen, "back p1 present yes"; got != want {
		t.Fatalf("second presence call %q, want %q", got, want)
	}
	select {
	case s := <-g.seen:
		t.Fatalf("an extra presence call: %q", s)
	default:
	}
}

// New refuses a PlayerAway that is not the hook's, as it does every
// optional hook's.
func TestNewChecksPresenceHooks(t *testing.T) {
	t.Parallel()
	_, err := New[*csim, int, *cplayer](awayWrongPlayer{}, Config{}, nil)
	const r = "*room.Room[*room.csim,int,*room.cplayer]"
	want := "room: game hook does not match: game method PlayerAway has signature func(" + r + ", string); want func(" + r + ", *room.cplayer) to be called as the PlayerAway hook"
	if err == nil || err.Error() != want {
		t.Fatalf("New: %v\nwant %s", err, want)
	}
}
