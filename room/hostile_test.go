package room

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testbin"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// A failed handoff write moves nobody: the player on a rejoin forward is
// not redirected, stays connected and is told to retry (SPEC table E).
func TestFailedHandoffWriteKeepsPlayer(t *testing.T) {
	a, b, urlA, _, fl := twoServersB(t, func() Game[*csim, int, *cplayer] { return redirecting{newCounter()} })
	if _, err := b.OpenRoom(t.Context(), Info{ID: "match", Players: []string{"p1"}}); err != nil {
		t.Fatal(err)
	}
	srvB := b.fleet.(*fleet.Fleet)
	if err := srvB.PutHandoff(t.Context(), "s0", "p1", []byte(`{"kind":"queue"}`)); err != nil {
		t.Fatal(err)
	}
	fl.Servers[0].Backplane.Fail("PutHandoff", errors.New("handoff write lost"))
	c := playtest.DialPlayer(t, urlA, a.Tickets(), "p1", "")
	c.Hello("rejoin")
	for {
		m, err := c.Receive()
		if err != nil {
			t.Fatalf("connection closed (%v) before a retry", err)
		}
		if m["type"] == "redirect" {
			t.Fatalf("redirected %v though the handoff was not written", m)
		}
		if m["type"] == "retry" {
			break
		}
	}
	if !a.Connected("p1") {
		t.Fatal("the player told to retry is no longer connected")
	}
}

// cutUntilLost keeps fl cut off (cut) until it serves alone, brings it
// back, and waits for its re-assertion to find the claim on player id
// lost.
func cutUntilLost(t *testing.T, fl *fleet.Fleet, cut func(bool), id string) {
	t.Helper()
	cut(true)
	testrun.WaitFor(t, "the server cut off serves alone", fl.Alone)
	cut(false)
	testrun.WaitFor(t, "the claim on "+id+", taken over by another server, is let go", func() bool { return !fl.Holds(fleet.KindPlayer, id) })
}

// A server that loses a player's claim at re-assertion removes the player
// from its room as if it had left, and does not seat it again on a
// "hello rejoin": the player goes to the holder (#16.3).
func TestLostClaimUnseatsAndRejoinGoesToHolder(t *testing.T) {
	a, b, urlA, _, fl := twoServersB(t, func() Game[*csim, int, *cplayer] { return redirecting{newCounter()} })
	ctx := t.Context()
	if _, err := a.OpenRoom(ctx, Info{ID: "old", Players: []string{"x", "y"}}); err != nil {
		t.Fatal(err)
	}
	cy := playtest.DialPlayer(t, urlA, a.Tickets(), "y", "")
	if m := cy.Welcome("rejoin"); m["room"] != "old" {
		t.Fatalf("welcome %v", m)
	}
	cx := playtest.DialPlayer(t, urlA, a.Tickets(), "x", "")
	cx.Welcome("rejoin")

	// A is cut off; x and y are matched on B meanwhile: as soon as A's
	// record expired (while it lives, B cannot claim them, and a room that
	// cannot claim its players seats nobody).
	fa := a.fleet.(*fleet.Fleet)
	fl.Servers[0].Backplane.Cut(true)
	testrun.WaitFor(t, "B opens a room for x and y", func() bool {
		_, err := b.OpenRoom(ctx, Info{ID: "new", Players: []string{"x", "y"}})
		if err != nil && !errors.Is(err, ErrSeated) {
			t.Fatal(err)
		}
		return err == nil
	})
	cutUntilLost(t, fa, fl.Servers[0].Backplane.Cut, "x")

	// y, still connected to A, is told it left and is out of the room.
	if m := cy.Next("room_end"); m["reason"] != ReasonLeft {
		t.Fatalf("room_end %v, want reason %q", m, ReasonLeft)
	}
	testrun.WaitFor(t, "y is out of the room", func() bool { return a.RoomOf("y") == "" })
	// x reconnects to A with hello rejoin: not reseated, sent to B.
	cx = playtest.DialPlayer(t, urlA, a.Tickets(), "x", "")
	if m := cx.Welcome("rejoin"); m["room"] == "old" {
		t.Fatalf("x was seated again in A's old room: %v", m)
	}
	if m := cx.Next("redirect"); m["node"] != "s1" {
		t.Fatalf("redirect %v, want to s1", m)
	}
}

// A connection that sends faster than Limits.Messages allows is closed
// with StatusLimited and counted; the others are not touched (#16.5).
// Why the server cut it is logged (at debug level) with its code and
// reason: a soak run's drops could be explained only with a patched build
// before.
func TestFloodingConnectionIsLimited(t *testing.T) {
	var log testbin.Buffer
	h, err := New[*csim, int, *cplayer](newCounter(), Config{Limits: Limits{Messages: 10, Burst: 20}},
		slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	runHost(t, h)
	srv := newServer(t, h)
	connect := func(id string) *playtest.Conn {
		c := playtest.DialPlayer(t, srv.URL, h.Tickets(), id, "")
		c.Welcome("new")
		return c
	}
	victim := connect("victim")
	flooder := connect("flooder")
	if _, err := h.OpenRoom(t.Context(), Info{ID: "r", Players: []string{"victim", "flooder"}}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range 500 {
			if flooder.Write(t.Context(), websocket.MessageText, []byte(`{"type":"input","data":1}`)) != nil {
				return
			}
		}
	}()
	if code := flooder.CloseCode(); code != StatusLimited {
		t.Fatalf("a flooding connection closed with %d, want %d", code, StatusLimited)
	}
	if n := h.Stats().Limited; n != 1 {
		t.Fatalf("Stats.Limited %d, want 1", n)
	}
	victim.SendText(`{"type":"input","data":1}`)
	if !h.Connected("victim") {
		t.Fatal("the other player was disconnected")
	}
	want := fmt.Sprintf(`player_id=flooder code=%d reason="too many messages"`, StatusLimited)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(log.String(), `msg="closed a client"`) || !strings.Contains(log.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("log has no %s:\n%s", want, log.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTokenBucket(t *testing.T) {
	var b bucket
	now := time.Unix(1000, 0)
	for i := range 20 {
		if !b.take(now, 10, 20) {
			t.Fatalf("message %d of the burst refused", i)
		}
	}
	if b.take(now, 10, 20) {
		t.Fatal("a message past the burst was allowed")
	}
	now = now.Add(100 * time.Millisecond) // one token at 10/s
	if !b.take(now, 10, 20) || b.take(now, 10, 20) {
		t.Fatal("after 100ms at 10/s exactly one more message should pass")
	}
	now = now.Add(time.Hour)
	for i := range 20 {
		if !b.take(now, 10, 20) {
			t.Fatalf("after a long pause, message %d of a full burst refused", i)
		}
	}
	if b.take(now, 10, 20) {
		t.Fatal("the bucket filled past its burst")
	}
}
