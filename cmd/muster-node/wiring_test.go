package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/internal/testkit/fedtest"
	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/matchmaking"
)

// TestGameServerWiredToHome: a node's Muster game server, on 127.0.0.2,
// wired to home through muster.WithTicketCheckers and
// muster.WithRoomWatchers, admits players with home's tokens (once each)
// and its rooms reach home as full snapshots.
func TestGameServerWiredToHome(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	secret := []byte("game-token-secret-0123456789")
	fh, err := federation.NewHome(federation.HomeConfig{RegionsCache: -1}, memory.New(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	home := fedtest.Serve(t, fh)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodeKey := home.ApprovedNode(t, "au-sydney", "AU")
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	}
	gameURL := "ws://" + l.Addr().String() + "/play"

	node, err := federation.NewNode(federation.NodeConfig{
		HomeURL: home.URL, NodeKey: nodeKey, KeyFile: filepath.Join(t.TempDir(), "key"),
		Services: map[string]string{federation.ServiceGame: gameURL}, AnnounceEvery: 100 * time.Millisecond,
	}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := federation.NewTokenChecker(federation.TokenCheckerConfig{Secret: secret, NodeID: "au-sydney"})
	if err != nil {
		t.Fatal(err)
	}
	rooms := federation.NewRoomReporter(node, quiet)
	srv, err := muster.New(&hosttest.Game{}, muster.DefaultConfig(),
		muster.WithListener(l), muster.WithLogger(quiet),
		muster.WithPlaylists(matchmaking.Playlist{Name: "duel"}),
		muster.WithTicketCheckers(tokens), muster.WithRoomWatchers(rooms))
	if err != nil {
		t.Fatal(err)
	}
	tokens.UseCounter(srv.Fleet())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{node.Run, rooms.Run, srv.Run} {
		wg.Go(func() {
			if err := run(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	defer wg.Wait()
	defer cancel()
	fedtest.WaitFor(t, "the node in rotation", func() bool {
		list, err := home.Regions(ctx)
		return err == nil && len(list.Regions) == 1
	})

	players := map[string]*playtest.Conn{}
	tickets := map[string]string{}
	for _, id := range []string{"alice", "bob"} {
		tickets[id] = fedtest.Mint(t, string(secret), id, "duel", "au-sydney")
		c, m, err := playtest.Join(t, gameURL+"?ticket="+tickets[id])
		if err != nil || m["type"] != "welcome" || m["player"] != id {
			t.Fatalf("%s with a home token: %v %v", id, m, err)
		}
		players[id] = c
		c.Send("queue", map[string]string{"playlist": "duel"})
	}
	roomID, _ := players["alice"].Next("room")["room"].(string)
	fedtest.WaitFor(t, "the room at home", func() bool {
		r, err := home.Room(ctx, roomID)
		return err == nil && slices.Equal(r.Members, []string{"alice", "bob"}) && r.Properties["kind"] != ""
	})

	// A home token is good once; a ticket of nobody's is refused.
	for name, ticket := range map[string]string{"reused home token": tickets["alice"], "garbage": "v1.x.y"} {
		if _, m, err := playtest.Join(t, gameURL+"?ticket="+ticket); websocket.CloseStatus(err) != 4001 {
			t.Errorf("%s: %v %v, want close 4001", name, m, err)
		}
	}
}
