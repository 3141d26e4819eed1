package room

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// ender is the counter game with a RoomEnded hook that records each end
// with the room's total and players.
type ender struct {
	*counter
	emu   sync.Mutex
	ends  []string
	ended chan struct{}
}

func (g *ender) RoomEnded(r *Room[*csim, int, *cplayer], reason string) {
	if r.ID() == "boom-in-end" {
		panic("the hook panics")
	}
	g.emu.Lock()
	g.ends = append(g.ends, r.ID()+" "+reason+" "+strings.Join(slices.Sorted(slices.Values(r.Players())), ","))
	g.emu.Unlock()
	g.ended <- struct{}{}
}

func (g *ender) seen() []string {
	g.emu.Lock()
	defer g.emu.Unlock()
	return slices.Sorted(slices.Values(g.ends))
}

func TestRoomEnderToldOfEveryEnd(t *testing.T) {
	g := &ender{counter: newCounter(), ended: make(chan struct{}, 10)}
	g.onStep = func(r *Room[*csim, int, *cplayer]) {
		if r.ID() == "boom" {
			panic("game bug")
		}
	}
	h := newHost(t, g, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	<-h.Started()
	open := func(id string, players ...string) *Room[*csim, int, *cplayer] {
		r, err := h.OpenRoom(t.Context(), Info{ID: id, Players: players})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	open("over", "a", "b").End("finished")
	<-g.ended
	open("boom", "c")
	<-g.ended
	open("boom-in-end").End("x") // its hook panics: logged, the host goes on
	open("running", "e")
	cancel()
	<-done
	<-g.ended
	want := []string{
		"boom panic c",
		"over finished a,b",
		"running server-stopped e",
	}
	if got := g.seen(); !slices.Equal(got, want) {
		t.Fatalf("ends\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestRoomEnderToldOfAbandonment(t *testing.T) {
	g := &ender{counter: newCounter(), ended: make(chan struct{}, 10)}
	h := newHost(t, g, Config{AwayTimeout: time.Millisecond})
	runHost(t, h)
	if _, err := h.OpenRoom(t.Context(), Info{ID: "left-alone", Players: []string{"d"}}); err != nil {
		t.Fatal(err)
	}
	<-g.ended // nobody connected: abandoned after 1ms
	if got := g.seen(); !slices.Equal(got, []string{"left-alone abandoned d"}) {
		t.Fatalf("ends %v", got)
	}
}

func TestDefaultDrainPacketSaysLongMatchesEnd(t *testing.T) {
	h := newHost(t, newCounter(), Config{})
	p, ok := h.DrainPacket().(DrainingPacket)
	if !ok || p.Type != "server_draining" || !strings.Contains(p.Reason, "drain timeout is ended") {
		t.Fatalf("default drain packet %#v", h.DrainPacket())
	}
	if p := (&Host[*csim, int, *cplayer]{game: draining{newCounter()}}).DrainPacket(); p == nil {
		t.Fatal("the game's own drain packet was replaced")
	}
}

// Without a Redirector the host moves players with its own packet, which
// carries a fresh ticket and the reconnect query.
func TestDefaultRedirectPacket(t *testing.T) {
	a, b, urlA := twoServers(t, func() Game[*csim, int, *cplayer] { return newCounter() })
	if _, err := b.OpenRoom(t.Context(), Info{ID: "match", Players: []string{"p1"}}); err != nil {
		t.Fatal(err)
	}
	c := playtest.DialPlayer(t, urlA, a.Tickets(), "p1", "")
	c.Hello("rejoin")
	rd := c.Next("redirect")
	if rd["node"] != "s1" || rd["param"] != "node" || rd["reason"] != ReasonRejoin {
		t.Fatalf("redirect %v", rd)
	}
	q, err := url.ParseQuery(rd["query"].(string))
	if err != nil || q.Get("node") != "s1" || q.Get("ticket") != rd["ticket"] {
		t.Fatalf("query %q (%v), want node=s1 and the ticket", rd["query"], err)
	}
	// The ticket and query take the player to its seat on B through A.
	c = playtest.DialPlay(t, urlA, rd["query"].(string))
	if m := c.Welcome("rejoin"); m["node"] != "s1" || m["room"] != "match" {
		t.Fatalf("welcome after the redirect %v, want s1's room", m)
	}
}

// picky is the counter game refusing players whose id starts with "x".
type picky struct{ *counter }

func (picky) Admit(r *Room[*csim, int, *cplayer], id string) error {
	if strings.HasPrefix(id, "x") {
		return errors.New("no x here")
	}
	return nil
}

func TestAdmitterRefusesJoin(t *testing.T) {
	g := picky{newCounter()}
	h := newHost(t, g, Config{})
	runHost(t, h)
	srv := newServer(t, h)
	c := playtest.DialPlayer(t, srv.URL, h.Tickets(), "xeno", "")
	c.Welcome("new")
	if _, err := h.OpenRoom(t.Context(), Info{ID: "r", Players: []string{"ann", "xeno"}}); err != nil {
		t.Fatal(err)
	}
	if m := c.Next("join_refused"); m["room"] != "r" || m["reason"] != "no x here" {
		t.Fatalf("join_refused %v", m)
	}
	testrun.WaitFor(t, "xeno is out of the room", func() bool { return h.RoomOf("xeno") == "" })
	r, _ := h.Room("r")
	if got := r.Players(); !slices.Equal(got, []string{"ann"}) {
		t.Fatalf("players %v, want ann alone", got)
	}
	if slices.Contains(g.lines("r"), "join xeno") {
		t.Fatal("Join ran for a refused player")
	}
}

// TestEndedFromEnd: Ended is true from the call to End on, before the pass
// that ends the room, so that a game's Input can ignore what comes after
// the input that decided the match in the same pass.
func TestEndedFromEnd(t *testing.T) {
	g := &ender{counter: newCounter(), ended: make(chan struct{}, 1)}
	h := newHost(t, g, Config{})
	runHost(t, h)
	r, err := h.OpenRoom(t.Context(), Info{ID: "race", Players: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Ended() {
		t.Fatal("a new room has ended")
	}
	r.End("won")
	if !r.Ended() {
		t.Fatal("Ended is false after End")
	}
	<-g.ended
	if !r.Ended() {
		t.Fatal("Ended is false after the room ended")
	}
}
