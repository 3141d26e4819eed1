package matchmaking

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

// game and sim are the test game: see hosttest.Game.
type (
	game = hosttest.Game
	sim  = hosttest.Sim
)

// cluster is N servers, each a fleet, a room host and a matchmaking
// module, in one process on one in-memory store. Players are not
// connected through sockets: the cluster keeps where each one is
// connected, and a move writes the real handoff through the fleet and
// then delivers the player to the target, which takes it, as a client
// following the redirect would.
type cluster struct {
	*hosttest.Players
	t         *testing.T
	fleet     *fleettest.Cluster
	nodes     []*node
	playlists []Playlist

	mu       sync.Mutex
	moves    []moveRec
	arrivals []arrival
}

type node struct {
	c    *cluster
	srv  *fleettest.Server
	game *game
	host *room.Host[*sim, int, string]
	mm   *Module

	// openHook, when set, runs before each room is opened.
	openHook func(info room.Info)
}

type moveRec struct {
	player, from, to, reason string
	waited                   time.Duration
}

type arrival struct {
	player, node string
	waited       time.Duration // as counted by the target on arrival
}

type clusterOpts struct {
	servers   int
	playlists []Playlist
	fleet     func(i int, cfg *fleet.Config)
	server    bool   // bind the hosts to their servers (load, drain)
	matchLen  uint64 // see game
	run       bool   // run the modules' loops
}

// startCluster starts the cluster in the current synctest bubble and
// waits until every server sees every other.
func startCluster(t *testing.T, o clusterOpts) *cluster {
	t.Helper()
	if len(o.playlists) == 0 {
		o.playlists = []Playlist{{Name: "duel"}}
	}
	c := &cluster{
		Players: hosttest.NewPlayers(), t: t,
		fleet:     fleettest.Start(t, o.servers, o.fleet),
		playlists: o.playlists,
	}
	for _, s := range c.fleet.Servers {
		n := &node{c: c, srv: s, game: &game{MatchLen: o.matchLen}}
		h, err := room.New[*sim, int, string](n.game, room.Config{Secret: "shared"}, quiet)
		if err != nil {
			t.Fatal(err)
		}
		mm, err := New(Config{}, o.playlists...)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Use(mm); err != nil {
			t.Fatal(err)
		}
		mm.env = testEnv{h, n}
		h.UseFleet(s.Fleet)
		if o.server {
			h.UseServer(s.Fleet)
		}
		n.host, n.mm = h, mm
		c.nodes = append(c.nodes, n)
		mm.manual = !o.run       // the test steps it by hand
		hosttest.GoRun(t, h.Run) // runs mm.Run too
	}
	time.Sleep(fleettest.Heartbeat) // every server has beaten after all started
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

// gather returns the servers in the order the playlist gathers, as the
// first server sees them.
func (c *cluster) gather(playlist string) []*node {
	var out []*node
	for _, n := range GatherOrder(c.playlist(playlist), c.nodes[0].srv.Nodes()) {
		out = append(out, c.node(n.ID))
	}
	return out
}

// playlist returns the cluster's playlist called name.
func (c *cluster) playlist(name string) Playlist {
	for _, pl := range c.playlists {
		if pl.Name == name {
			return pl
		}
	}
	c.t.Fatalf("no playlist %s", name)
	return Playlist{}
}

// connect connects player id to n now.
func (c *cluster) connect(n *node, id string) { c.Connect(n.srv.ID(), id) }

// queue connects player id to n and enqueues it.
func (c *cluster) queue(n *node, id, playlist string, rating *float64) {
	c.connect(n, id)
	now := time.Now()
	n.mm.enqueue(id, playlist, rating, now, now)
}

func (c *cluster) movesOf(id string) []moveRec {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []moveRec
	for _, m := range c.moves {
		if m.player == id {
			out = append(out, m)
		}
	}
	return out
}

func (c *cluster) allMoves() []moveRec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.moves)
}

// testEnv is the env of a node of a cluster.
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
	c.moves = append(c.moves, moveRec{player: id, from: e.n.srv.ID(), to: to.ID, reason: reason, waited: time.Duration(d.Waited)})
	c.mu.Unlock()

	// The client follows the redirect: the target takes the handoff.
	got, err := hosttest.TakeHandoff(ctx, target.srv, id)
	if err != nil {
		return err
	}
	target.mm.arrive(id, got, now, now)
	waited, _ := target.mm.Waited(id)
	c.mu.Lock()
	c.arrivals = append(c.arrivals, arrival{player: id, node: to.ID, waited: waited})
	c.mu.Unlock()
	return nil
}

func (e testEnv) Open(ctx context.Context, info room.Info) error {
	if e.n.openHook != nil {
		e.n.openHook(info)
	}
	_, err := e.n.host.OpenRoom(ctx, info)
	return err
}

func (e testEnv) Send(id string, p room.Packet) { e.n.c.Send(e.n.srv.ID(), id, p) }

func (e testEnv) Connected(id string) bool { return e.n.c.Where(id) == e.n.srv.ID() }

func (e testEnv) DrainPacket() room.Packet { return e.n.game.ServerDraining() }

func ptr[T any](v T) *T { return &v }
