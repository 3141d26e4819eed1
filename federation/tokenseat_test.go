package federation

import (
	"errors"
	"math"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/room"
)

// homeRoomHost is a node's room host with tc attached (as muster.Server
// does for muster.federation) and watchers added, serving /play on
// loopback until the test ends.
func homeRoomHost(t *testing.T, tc *TokenChecker, watchers ...room.RoomWatcher) (*room.Host[*hosttest.Sim, int, string], string) {
	t.Helper()
	h, err := room.New[*hosttest.Sim, int, string](&hosttest.Game{}, room.Config{Secret: "node secret", Limits: room.Limits{Connects: 1 << 20, Open: math.MaxInt}}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	h.AddTicketChecker(tc)
	for _, w := range watchers {
		h.AddRoomWatcher(w)
	}
	if err := h.Use(tc); err != nil {
		t.Fatal(err)
	}
	testrun.GoRun(t, h.Run)
	<-h.Started()
	srv := httptest.NewServer(h.Handler())
	t.Cleanup(srv.Close)
	return h, srv.URL
}

// TestTokenSeatsHomesRoom: a player holding a home token is seated in the
// room the token names, opened with home's id on the first arrival; a
// friend with a token for it joins it; a token for a home room that ended
// here, or for a room of another kind, is refused at arrival with 4001 and
// ReasonRoomNotHere.
func TestTokenSeatsHomesRoom(t *testing.T) {
	t.Parallel()
	tc, err := NewTokenChecker(TokenCheckerConfig{Secret: tokenSecret, NodeID: "au-sydney"})
	if err != nil {
		t.Fatal(err)
	}
	h, base := homeRoomHost(t, tc)
	token := func(player, roomID string) string {
		t.Helper()
		s, err := MintToken(tokenSecret, Token{PlayerID: player, RoomID: roomID, NodeID: "au-sydney", Expires: time.Now().Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		return playtest.PlayURL(base, "ticket="+s)
	}
	join := func(player, roomID string) *playtest.Conn {
		t.Helper()
		c, welcome, err := playtest.Join(t, token(player, roomID))
		if err != nil || welcome["type"] != "welcome" || welcome["player"] != player {
			t.Fatalf("%s: %v %v", player, welcome, err)
		}
		return c
	}
	creator := join("alice", "home-room-1")
	if got := creator.Next("room"); got["room"] != "home-room-1" || got["kind"] != KindHomeRoom {
		t.Fatalf("the creator's room: %v", got)
	}
	friend := join("bob", "home-room-1")
	if got := friend.Next("room"); got["room"] != "home-room-1" {
		t.Fatalf("the friend's room: %v", got)
	}
	r, ok := h.Room("home-room-1")
	if !ok {
		t.Fatal("home-room-1 is not open")
	}
	testrun.WaitFor(t, "both seated in home's room", func() bool {
		return slices.Equal(slices.Sorted(slices.Values(r.Players())), []string{"alice", "bob"})
	})
	if got := join("carol", "home-room-2").Next("room"); got["room"] != "home-room-2" {
		t.Fatalf("another home room: %v", got)
	}

	r.End("over")
	creator.Next("room_end")
	friend.Next("room_end")
	notHere := func(what, url string) {
		t.Helper()
		c, m, err := playtest.Join(t, url)
		if err == nil && m["type"] == "welcome" {
			m, err = c.Receive() // the ticket checked: refused at arrival
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != room.StatusBadTicket || !strings.Contains(ce.Reason, ReasonRoomNotHere) {
			t.Fatalf("%s: %v %v; want 4001 %q", what, m, err, ReasonRoomNotHere)
		}
	}
	notHere("a token for a home room that ended here", token("dave", "home-room-1"))

	if err := h.Open(t.Context(), room.Info{ID: "lobby-room", Kind: "lobby", Players: []string{"erin"}}); err != nil {
		t.Fatal(err)
	}
	notHere("a token for a room of another kind", token("frank", "lobby-room"))
	if _, ok := h.Room("home-room-1"); ok {
		t.Fatal("the ended room was opened again")
	}
}
