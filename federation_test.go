package muster_test

import (
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/internal/testkit/playtest"
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
	first.CloseNow()
	again := playtest.DialPlay(t, "http://"+s.addr, ticket)
	again.Hello("new")
	if m, err := again.Receive(); websocket.CloseStatus(err) != 4001 {
		t.Fatalf("the home token again: %v %v, want close 4001", m, err)
	}

	if err := s.Host().Open(ctx, room.Info{ID: "r1", Kind: "test", Players: []string{"alice"}}); err != nil {
		t.Fatal(err)
	}
	waitWithin(t, time.Minute, "room r1 at home", func() bool {
		r, err := home.Room(ctx, "r1")
		return err == nil && slices.Equal(r.Members, []string{"alice"}) && r.Properties["kind"] == "test"
	})
}
