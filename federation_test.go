package muster_test

import (
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/matchmaking"
	"github.com/muster-gg/muster/room"
)

// A server configured by muster.federation alone, with no code of the
// game's, enrols and announces at home, admits a player with a home token
// once, and reports its rooms home; Run stops the agent and the reporter
// before it returns (goleak).
func TestFederationFromConfig(t *testing.T) {
	const secret = "game-token-secret-0123456789"
	home, err := federation.NewHome(federation.HomeConfig{RegionsCache: -1}, memory.New(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(home.Handler())
	defer hs.Close()
	ctx := t.Context()
	_, nodeKey, err := home.CreateNode(ctx, federation.NodeSpec{ID: "au-sydney", Country: "AU"})
	if err != nil {
		t.Fatal(err)
	}
	if err := home.Approve(ctx, "au-sydney"); err != nil {
		t.Fatal(err)
	}
	cfg := muster.DefaultConfig()
	if err := config.ApplyEnv(&cfg, []string{
		"MUSTER__FEDERATION__HOME_URL=" + hs.URL,
		"MUSTER__FEDERATION__NODE_ID=au-sydney",
		"MUSTER__FEDERATION__TOKEN_SECRET=" + secret,
		"MUSTER__FEDERATION__KEY_FILE=" + filepath.Join(t.TempDir(), "key"),
		"MUSTER__FEDERATION__NODE_KEY=" + nodeKey,
		"MUSTER__FEDERATION__GAME_ADDRESS=ws://127.0.0.1:1/play",
		"MUSTER__FEDERATION__ANNOUNCE_EVERY=100ms",
	}); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, cfg)
	waitWithin(t, time.Minute, "the node in rotation with its game address", func() bool {
		list, err := home.Regions(ctx)
		return err == nil && len(list.Regions) == 1 && slices.Contains(list.Regions[0].Services[federation.ServiceGame], "ws://127.0.0.1:1/play")
	})

	tok, err := federation.MintToken([]byte(secret), federation.Token{PlayerID: "alice", RoomID: "r1", NodeID: "au-sydney", Expires: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	ticket := "ticket=" + tok
	first := playtest.DialPlay(t, "http://"+s.addr, ticket)
	welcome(t, first, "alice")
	if m := first.Next("room"); m["room"] != "r1" || m["kind"] != federation.KindHomeRoom {
		t.Fatalf("the token's holder is in %v, want home's room r1", m)
	}
	first.CloseNow()
	again := playtest.DialPlay(t, "http://"+s.addr, ticket)
	again.Hello("new")
	if m, err := again.Receive(); websocket.CloseStatus(err) != 4001 {
		t.Fatalf("the home token again: %v %v, want close 4001", m, err)
	}
	waitWithin(t, time.Minute, "room r1 at home", func() bool {
		r, err := home.Room(ctx, "r1")
		return err == nil && slices.Equal(r.Members, []string{"alice"}) && r.Properties["kind"] == federation.KindHomeRoom
	})
}

// A game-role server (muster.federation.role game) has no queues or
// lobbies of its own: playlists given in code are refused naming the
// role, WithLobbies is ignored, and home's tokens seat their holders in
// home's room.
func TestFederationGameRole(t *testing.T) {
	const secret = "game-token-secret-0123456789"
	home, err := federation.NewHome(federation.HomeConfig{RegionsCache: -1}, memory.New(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(home.Handler())
	defer hs.Close()
	ctx := t.Context()
	_, nodeKey, err := home.CreateNode(ctx, federation.NodeSpec{ID: "au-sydney", Country: "AU"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := muster.DefaultConfig()
	if err := config.ApplyEnv(&cfg, []string{
		"MUSTER__FEDERATION__HOME_URL=" + hs.URL,
		"MUSTER__FEDERATION__TOKEN_SECRET=" + secret,
		"MUSTER__FEDERATION__KEY_FILE=" + filepath.Join(t.TempDir(), "key"),
		"MUSTER__FEDERATION__NODE_KEY=" + nodeKey,
		"MUSTER__FEDERATION__ROLE=game",
	}); err != nil {
		t.Fatal(err)
	}
	_, err = muster.New(Counter{}, cfg, muster.WithPlaylists(matchmaking.Playlist{Name: "duel"}))
	if err == nil || !strings.Contains(err.Error(), "muster.federation.role (MUSTER__FEDERATION__ROLE) is game") {
		t.Fatalf("a game-role server with a playlist: %v", err)
	}
	s := startServer(t, cfg, muster.WithLobbies())
	for _, p := range []string{"alice", "bob"} {
		tok, err := federation.MintToken([]byte(secret), federation.Token{PlayerID: p, RoomID: "home-9", Expires: time.Now().Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		c := playtest.DialPlay(t, "http://"+s.addr, "ticket="+tok)
		welcome(t, c, p)
		if m := c.Next("room"); m["room"] != "home-9" {
			t.Fatalf("%s is in %v, want home's room home-9", p, m)
		}
		if p == "bob" {
			c.Send("lobby.create", map[string]any{})
			if code := c.CloseCode(); code != room.StatusUnknownType {
				t.Fatalf("lobby.create on a game-role server: close %d, want %d", code, room.StatusUnknownType)
			}
		}
	}
}
