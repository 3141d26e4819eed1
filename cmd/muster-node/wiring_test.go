package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/internal/hosttest"
	"github.com/muster-gg/muster/matchmaking"
)

// TestGameServerWiredToHome: a node's Muster game server, on 127.0.0.2,
// wired to home through muster.WithTicketCheckers and
// muster.WithRoomWatchers, admits players with home's tokens (once each)
// and its rooms reach home as full snapshots.
func TestGameServerWiredToHome(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	secret := []byte("game-token-secret-0123456789")
	home, err := federation.NewHome(federation.HomeConfig{RegionsCache: -1}, memory.New(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(home.Handler())
	defer hs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, nodeKey, err := home.CreateNode(ctx, federation.NodeSpec{ID: "au-sydney", Country: "AU"})
	if err != nil {
		t.Fatal(err)
	}
	if err := home.Approve(ctx, "au-sydney"); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	}
	gameURL := "ws://" + l.Addr().String() + "/play"

	node, err := federation.NewNode(federation.NodeConfig{
		HomeURL: hs.URL, NodeKey: nodeKey, KeyFile: filepath.Join(t.TempDir(), "key"),
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
	srv, err := muster.New(&hosttest.Game{}, config.Default(),
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
	waitFor(t, "the node in rotation", func() bool {
		list, err := home.Regions(ctx)
		return err == nil && len(list.Regions) == 1
	})

	mint := func(player string) string {
		tok, err := federation.MintToken(secret, federation.Token{PlayerID: player, RoomID: "duel", NodeID: "au-sydney", Expires: time.Now().Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	// connect says hello with ticket and returns the connection and the
	// first packet.
	connect := func(ticket string) (*websocket.Conn, map[string]any, error) {
		dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
		defer dcancel()
		c, _, err := websocket.Dial(dctx, gameURL+"?ticket="+ticket, nil)
		if err != nil {
			return nil, nil, err
		}
		hello, _ := json.Marshal(map[string]any{"type": "hello", "data": map[string]string{"mode": "new"}})
		if err := c.Write(dctx, websocket.MessageText, hello); err != nil {
			return c, nil, err
		}
		m, err := read(dctx, c)
		return c, m, err
	}
	players := map[string]*websocket.Conn{}
	tickets := map[string]string{}
	for _, id := range []string{"alice", "bob"} {
		tickets[id] = mint(id)
		c, m, err := connect(tickets[id])
		if err != nil || m["type"] != "welcome" || m["player"] != id {
			t.Fatalf("%s with a home token: %v %v", id, m, err)
		}
		defer c.CloseNow()
		players[id] = c
		q, _ := json.Marshal(map[string]any{"type": "queue", "data": map[string]string{"playlist": "duel"}})
		if err := c.Write(ctx, websocket.MessageText, q); err != nil {
			t.Fatal(err)
		}
	}
	var roomID string
	for {
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		m, err := read(rctx, players["alice"])
		rcancel()
		if err != nil {
			t.Fatalf("alice waiting for a room: %v", err)
		}
		if m["type"] == "room" {
			roomID, _ = m["room"].(string)
			break
		}
	}
	waitFor(t, "the room at home", func() bool {
		r, err := home.Room(ctx, roomID)
		return err == nil && slices.Equal(r.Members, []string{"alice", "bob"}) && r.Properties["kind"] != ""
	})

	// A home token is good once; a ticket of nobody's is refused.
	for name, ticket := range map[string]string{"reused home token": tickets["alice"], "garbage": "v1.x.y"} {
		c, m, err := connect(ticket)
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != 4001 {
			t.Errorf("%s: %v %v, want close 4001", name, m, err)
		}
		if c != nil {
			c.CloseNow()
		}
	}
}

func read(ctx context.Context, c *websocket.Conn) (map[string]any, error) {
	_, data, err := c.Read(ctx)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	err = json.Unmarshal(data, &m)
	return m, err
}
