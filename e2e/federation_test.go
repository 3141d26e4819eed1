package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/internal/testbin"
)

// TestDuelServerFederated: the duel example, run as its own process and
// configured only by MUSTER__FEDERATION__ variables, is a server of a
// federation node beside a muster-node agent (its TURN and STUN): home
// (on a real Redis) lists the node with the duel's game address and the
// agent's relays; a player with a home-minted token connects to the duel
// once (the token's reuse is refused), and the room two players are
// matched into on the duel playlist reaches home's register.
func TestDuelServerFederated(t *testing.T) {
	goBin := testbin.Need(t, "go")
	srv := testbin.StartRedis(t)
	duelBin := buildDuel(t)
	nodeBin := filepath.Join(buildDir, "muster-node")
	build := exec.Command(goBin, "build", "-o", nodeBin, "./cmd/muster-node")
	build.Dir = root(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build muster-node: %v\n%s", err, out)
	}

	bp, err := redis.Open(redis.Config{URL: srv.Addr, Cluster: "home"})
	if err != nil {
		t.Fatal(err)
	}
	defer bp.Close()
	home, err := federation.NewHome(federation.HomeConfig{
		RegionsCache: -1, SilentAfter: 2 * time.Second, AnnounceEvery: 200 * time.Millisecond,
		Limits: federation.RateLimits{Announce: -1}, // announces every 200ms
	}, bp, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(home.Handler())
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, nodeKey, err := home.CreateNode(ctx, federation.NodeSpec{ID: "au-sydney", Country: "AU"})
	if err != nil {
		t.Fatal(err)
	}
	if err := home.Approve(ctx, "au-sydney"); err != nil {
		t.Fatal(err)
	}

	// start runs bin with env until the test ends; its output is shown
	// when the test fails, and a race or panic in it fails the test.
	start := func(name, bin string, env []string, args ...string) *testbin.Buffer {
		t.Helper()
		out := &testbin.Buffer{}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Errorf("%s did not stop on SIGTERM", name)
			}
			log := out.String()
			if strings.Contains(log, "WARNING: DATA RACE") || strings.Contains(log, "panic:") {
				t.Errorf("%s:\n%s", name, log)
			} else if t.Failed() {
				t.Logf("%s:\n%s", name, log)
			}
		})
		return out
	}

	// The node's agent announces its relays on 127.0.0.2.
	start("muster-node", nodeBin, []string{
		"MUSTER_NODE_NODE_KEY=" + nodeKey, "MUSTER_NODE_SERVICES=turn=127.0.0.2:3478,stun=127.0.0.2:3478",
	}, "-home", hs.URL, "-key-file", filepath.Join(t.TempDir(), "agent-key"), "-announce-every", "200ms")

	// The duel server on 127.0.0.3, wired to home by configuration only.
	const secret = "game-token-secret-0123456789"
	port := testbin.FreePort(t, "127.0.0.3")
	gameURL := "ws://127.0.0.3:" + strconv.Itoa(port) + "/play"
	start("duel", duelBin, []string{
		"MUSTER__SERVER__HTTP__HOST=127.0.0.3",
		"MUSTER__SERVER__HTTP__PORT=" + strconv.Itoa(port),
		"MUSTER__SERVER__DRAIN__TIMEOUT=1",
		"MUSTER__FEDERATION__HOME_URL=" + hs.URL,
		"MUSTER__FEDERATION__NODE_ID=au-sydney",
		"MUSTER__FEDERATION__TOKEN_SECRET=" + secret,
		"MUSTER__FEDERATION__KEY_FILE=" + filepath.Join(t.TempDir(), "duel-key"),
		"MUSTER__FEDERATION__NODE_KEY=" + nodeKey,
		"MUSTER__FEDERATION__GAME_ADDRESS=" + gameURL,
		"MUSTER__FEDERATION__ANNOUNCE_EVERY=200ms",
	})

	waitUntil(t, "the node listed with the duel's game and the agent's relays", func() bool {
		list, err := home.Regions(ctx)
		if err != nil || len(list.Regions) != 1 {
			return false
		}
		s := list.Regions[0].Services
		return slices.Contains(s[federation.ServiceGame], gameURL) && slices.Contains(s[federation.ServiceTURN], "127.0.0.2:3478")
	})

	mint := func(player string) string {
		tok, err := federation.MintToken([]byte(secret), federation.Token{PlayerID: player, RoomID: "duel", NodeID: "au-sydney", Expires: time.Now().Add(time.Minute)})
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
		m, err := readJSON(dctx, c)
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
	for roomID == "" {
		rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
		m, err := readJSON(rctx, players["alice"])
		rcancel()
		if err != nil {
			t.Fatalf("alice waiting for a room: %v", err)
		}
		if m["type"] == "room" {
			roomID, _ = m["room"].(string)
		}
	}
	waitUntil(t, "the duel's room in home's register", func() bool {
		r, err := home.Room(ctx, roomID)
		if err != nil {
			return false
		}
		members := slices.Sorted(slices.Values(r.Members))
		return slices.Equal(members, []string{"alice", "bob"}) && r.Properties["kind"] != "" && r.NodeID == "au-sydney"
	})

	// A home token is good once.
	c, m, err := connect(tickets["alice"])
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4001 {
		t.Errorf("a reused home token: %v %v, want close 4001", m, err)
	}
	if c != nil {
		c.CloseNow()
	}
}

// waitUntil polls cond until it holds, failing the test after a minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
	}
}

func readJSON(ctx context.Context, c *websocket.Conn) (map[string]any, error) {
	_, data, err := c.Read(ctx)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	err = json.Unmarshal(data, &m)
	return m, err
}
