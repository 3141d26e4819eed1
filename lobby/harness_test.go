package lobby

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/fleettest"
	"github.com/muster-gg/muster/internal/hostenv"
	"github.com/muster-gg/muster/room"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.DiscardHandler)

const cooldown = 3 * time.Second // room.Config.MoveCooldown's default

// game is a test game whose rooms end by themselves after matchLen steps
// (never when 0).
type game struct {
	matchLen uint64

	mu    sync.Mutex
	ended map[string]string
}

type sim struct{}

func newGame(matchLen uint64) *game { return &game{matchLen: matchLen, ended: map[string]string{}} }

func (g *game) NewSim(room.Info) *sim                                  { return &sim{} }
func (g *game) Join(_ *room.Room[*sim, int, string], id string) string { return id }
func (g *game) Leave(*room.Room[*sim, int, string], string)            {}
func (g *game) Input(*room.Room[*sim, int, string], string, int)       {}
func (g *game) FixedStep(r *room.Room[*sim, int, string]) {
	if g.matchLen > 0 && r.Step() == g.matchLen {
		g.mu.Lock()
		g.ended[r.ID()] = "match over"
		g.mu.Unlock()
		r.End("match over")
	}
}
func (g *game) Redirect(r room.Redirect) room.Packet {
	return map[string]string{"type": "redirect", "node": r.NodeID, "reason": r.Reason}
}
func (g *game) ServerDraining() room.Packet { return map[string]string{"type": "server_draining"} }

// cluster is N servers, each a fleet, a room host and a lobby module, in
// one process on one in-memory store. Players are not connected through
// sockets: the cluster keeps where each is connected, and a move writes
// the real handoff through the fleet and delivers the player to the
// target, which takes it, as a client following the redirect would.
type cluster struct {
	t     *testing.T
	fleet *fleettest.Cluster
	nodes []*node

	mu      sync.Mutex
	at      map[string]string
	arrived map[string]time.Time
	sent    map[string][]any
	moves   []moveRec
}

type node struct {
	c    *cluster
	srv  *fleettest.Server
	game *game
	host *room.Host[*sim, int, string]
	lm   *Module[*sim, int, string]
}

type moveRec struct {
	player, from, to, reason string
	ho                       handoff
}

type clusterOpts struct {
	servers  int
	server   bool   // bind hosts to their servers (load, drain)
	matchLen uint64 // see game
	run      bool   // run the modules' loops
}

func startCluster(t *testing.T, o clusterOpts) *cluster {
	t.Helper()
	c := &cluster{
		t: t, at: map[string]string{}, arrived: map[string]time.Time{}, sent: map[string][]any{},
		fleet: fleettest.Start(t, o.servers, nil),
	}
	for _, s := range c.fleet.Servers {
		n := &node{c: c, srv: s, game: newGame(o.matchLen)}
		h, err := room.New[*sim, int, string](n.game, room.Config{Secret: "shared"}, quiet)
		if err != nil {
			t.Fatal(err)
		}
		lm, err := New[*sim, int, string](Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Use(lm); err != nil {
			t.Fatal(err)
		}
		lm.env = testEnv{n}
		h.UseFleet(s.Fleet)
		if o.server {
			h.UseServer(s.Fleet)
		}
		n.host, n.lm = h, lm
		c.nodes = append(c.nodes, n)
		goRun(t, h.Run)
		if o.run {
			goRun(t, lm.Run)
		}
	}
	time.Sleep(fleettest.Heartbeat)
	synctest.Wait()
	for _, n := range c.nodes {
		if got := len(n.srv.Nodes()); got != o.servers {
			t.Fatalf("%s sees %d servers, want %d", n.srv.ID(), got, o.servers)
		}
	}
	return c
}

func goRun(t *testing.T, fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

func (c *cluster) node(id string) *node {
	for _, n := range c.nodes {
		if n.srv.ID() == id {
			return n
		}
	}
	return nil
}

func (c *cluster) connect(n *node, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at[id], c.arrived[id] = n.srv.ID(), time.Now()
}

func (c *cluster) where(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at[id]
}

func (c *cluster) allMoves() []moveRec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.moves)
}

// last returns the last packet of type typ sent to id.
func (c *cluster) last(id, typ string) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.sent[id]) - 1; i >= 0; i-- {
		switch p := c.sent[id][i].(type) {
		case StatePacket:
			if typ == TypeState {
				return p
			}
		case ErrorPacket:
			if typ == TypeError {
				return p
			}
		case LeftPacket:
			if typ == TypeLeft {
				return p
			}
		case map[string]string:
			if p["type"] == typ {
				return p
			}
		}
	}
	return nil
}

// create connects id to n and creates a lobby; it returns the code.
func (c *cluster) create(n *node, id string) string {
	c.t.Helper()
	c.connect(n, id)
	n.lm.create(c.t.Context(), id, time.Now())
	code := n.lm.LobbyOf(id)
	if code == "" {
		c.t.Fatalf("%s created no lobby on %s: %v", id, n.srv.ID(), c.last(id, TypeError))
	}
	return code
}

type testEnv struct{ n *node }

func (e testEnv) Fleet() room.Fleet { return e.n.srv.Fleet }

func (e testEnv) Move(ctx context.Context, id string, to fleet.Node, reason string, ho *room.Handoff) error {
	c, from := e.n.c, e.n.srv.ID()
	c.mu.Lock()
	at, arrived := c.at[id], c.arrived[id]
	c.mu.Unlock()
	if at != from {
		return hostenv.ErrGone
	}
	if time.Since(arrived) < e.n.host.Config().MoveCooldown {
		return room.ErrCooldown
	}
	data, err := json.Marshal(ho)
	if err != nil {
		return err
	}
	if err := e.n.srv.PutHandoff(ctx, to.ID, id, data); err != nil {
		return fmt.Errorf("move: %w", err)
	}
	var d handoff
	json.Unmarshal(ho.Data, &d)
	target := c.node(to.ID)
	now := time.Now()
	c.mu.Lock()
	c.moves = append(c.moves, moveRec{player: id, from: from, to: to.ID, reason: reason, ho: d})
	c.at[id], c.arrived[id] = to.ID, now
	c.mu.Unlock()

	var got room.Handoff
	raw, err := target.srv.TakeHandoff(ctx, id)
	switch {
	case err == nil:
		if err := json.Unmarshal(raw, &got); err != nil {
			return err
		}
	case !errors.Is(err, fleet.ErrNotFound):
		return err
	}
	target.lm.arrive(ctx, id, got, now, now)
	return nil
}

func (e testEnv) Open(ctx context.Context, info room.Info) error {
	_, err := e.n.host.OpenRoom(ctx, info)
	return err
}

func (e testEnv) Send(id string, p room.Packet) {
	c := e.n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at[id] == e.n.srv.ID() {
		c.sent[id] = append(c.sent[id], p)
	}
}

func (e testEnv) Connected(id string) bool { return e.n.c.where(id) == e.n.srv.ID() }
func (e testEnv) DrainPacket() room.Packet { return e.n.game.ServerDraining() }
func (e testEnv) Cooldown() time.Duration  { return e.n.host.Config().MoveCooldown }
