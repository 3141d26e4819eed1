package lobby

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/fleettest"
	"github.com/muster-gg/muster/internal/hosttest"
	"github.com/muster-gg/muster/room"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.DiscardHandler)

const cooldown = 3 * time.Second // room.Config.MoveCooldown's default

// game and sim are the test game: see hosttest.Game.
type (
	game = hosttest.Game
	sim  = hosttest.Sim
)

// cluster is N servers, each a fleet, a room host and a lobby module, in
// one process on one in-memory store. Players are not connected through
// sockets: the cluster keeps where each is connected, and a move writes
// the real handoff through the fleet and delivers the player to the
// target, which takes it, as a client following the redirect would.
type cluster struct {
	*hosttest.Players
	t     *testing.T
	fleet *fleettest.Cluster
	nodes []*node

	mu    sync.Mutex
	moves []moveRec
}

type node struct {
	c    *cluster
	srv  *fleettest.Server
	game *game
	host *room.Host[*sim, int, string]
	lm   *Module
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
		Players: hosttest.NewPlayers(), t: t,
		fleet: fleettest.Start(t, o.servers, nil),
	}
	for _, s := range c.fleet.Servers {
		n := &node{c: c, srv: s, game: &game{MatchLen: o.matchLen}}
		h, err := room.New[*sim, int, string](n.game, room.Config{Secret: "shared"}, quiet)
		if err != nil {
			t.Fatal(err)
		}
		lm, err := New(Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Use(lm); err != nil {
			t.Fatal(err)
		}
		lm.env = testEnv{h, n}
		h.UseFleet(s.Fleet)
		if o.server {
			h.UseServer(s.Fleet)
		}
		n.host, n.lm = h, lm
		c.nodes = append(c.nodes, n)
		lm.manual = !o.run       // the test steps it by hand
		hosttest.GoRun(t, h.Run) // runs lm.Run too
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

func (c *cluster) node(id string) *node {
	for _, n := range c.nodes {
		if n.srv.ID() == id {
			return n
		}
	}
	return nil
}

func (c *cluster) connect(n *node, id string) { c.Connect(n.srv.ID(), id) }

func (c *cluster) allMoves() []moveRec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.moves)
}

// last returns the last packet of type typ sent to id.
func (c *cluster) last(id, typ string) any {
	sent := c.Sent(id)
	for i := len(sent) - 1; i >= 0; i-- {
		switch p := sent[i].(type) {
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

type testEnv struct {
	*room.Host[*sim, int, string] // the rest of room.ModuleHost
	n                             *node
}

func (e testEnv) Fleet() room.Fleet { return e.n.srv.Fleet }

func (e testEnv) MovePlayer(ctx context.Context, id string, to fleet.Node, reason string, ho *room.Handoff) error {
	c, target := e.n.c, e.n.c.node(to.ID)
	redirect := e.n.game.Redirect(room.Redirect{NodeID: to.ID, Reason: reason})
	now, err := c.Players.Move(ctx, e.n.srv, target.srv, id, ho, e.n.host.Config().MoveCooldown, redirect)
	if err != nil {
		return err
	}
	var d handoff
	json.Unmarshal(ho.Data, &d)
	c.mu.Lock()
	c.moves = append(c.moves, moveRec{player: id, from: e.n.srv.ID(), to: to.ID, reason: reason, ho: d})
	c.mu.Unlock()
	got, err := hosttest.TakeHandoff(ctx, target.srv, id)
	if err != nil {
		return err
	}
	target.lm.arrive(ctx, id, got, now, now)
	return nil
}

func (e testEnv) Open(ctx context.Context, info room.Info) error {
	_, err := e.n.host.OpenRoom(ctx, info)
	return err
}

func (e testEnv) Send(id string, p room.Packet) { e.n.c.Send(e.n.srv.ID(), id, p) }
func (e testEnv) Connected(id string) bool      { return e.n.c.Where(id) == e.n.srv.ID() }
func (e testEnv) DrainPacket() room.Packet      { return e.n.game.ServerDraining() }
