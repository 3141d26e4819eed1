package matchmaking

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

// game is a test game: rooms of kind "short" (and every room when
// matchLen is set) end by themselves after matchLen steps.
type game struct {
	matchLen uint64 // steps; 0 = rooms run until ended

	mu    sync.Mutex
	ended map[string]string // room → why (recorded by the game's own end)
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

// cluster is N servers, each a fleet, a room host and a matchmaking
// module, in one process on one in-memory store. Players are not
// connected through sockets: the cluster keeps where each one is
// connected, and a move writes the real handoff through the fleet and
// then delivers the player to the target, which takes it, as a client
// following the redirect would.
type cluster struct {
	t     *testing.T
	fleet *fleettest.Cluster
	nodes []*node

	mu       sync.Mutex
	at       map[string]string    // player → server it is connected to
	arrived  map[string]time.Time // player → when it connected there
	sent     map[string][]any     // player → packets sent to it
	moves    []moveRec
	arrivals []arrival
}

type node struct {
	c    *cluster
	srv  *fleettest.Server
	game *game
	host *room.Host[*sim, int, string]
	mm   *Module[*sim, int, string]

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
		t: t, at: map[string]string{}, arrived: map[string]time.Time{}, sent: map[string][]any{},
		fleet: fleettest.Start(t, o.servers, o.fleet),
	}
	for _, s := range c.fleet.Servers {
		n := &node{c: c, srv: s, game: newGame(o.matchLen)}
		h, err := room.New[*sim, int, string](n.game, room.Config{Secret: "shared"}, quiet)
		if err != nil {
			t.Fatal(err)
		}
		mm, err := New[*sim, int, string](Config{}, o.playlists...)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Use(mm); err != nil {
			t.Fatal(err)
		}
		mm.env = testEnv{n}
		h.UseFleet(s.Fleet)
		if o.server {
			h.UseServer(s.Fleet)
		}
		n.host, n.mm = h, mm
		c.nodes = append(c.nodes, n)
		goRun(t, h.Run)
		if o.run {
			goRun(t, mm.Run)
		}
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

// goRun runs fn until the test ends.
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

// gather returns the servers in the order the playlist gathers, as the
// first server sees them.
func (c *cluster) gather(playlist string) []*node {
	var out []*node
	for _, n := range GatherOrder(playlist, c.nodes[0].srv.Nodes()) {
		out = append(out, c.node(n.ID))
	}
	return out
}

// connect connects player id to n now.
func (c *cluster) connect(n *node, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at[id], c.arrived[id] = n.srv.ID(), time.Now()
}

// queue connects player id to n and enqueues it.
func (c *cluster) queue(n *node, id, playlist string, rating *float64) {
	c.connect(n, id)
	now := time.Now()
	n.mm.enqueue(id, playlist, rating, now, now)
}

func (c *cluster) where(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at[id]
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

func (c *cluster) packets(id string) []any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sent[id])
}

// testEnv is the env of a node of a cluster.
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
	// What room.Host.Move does: cooldown, handoff, then redirect.
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
	c.moves = append(c.moves, moveRec{player: id, from: from, to: to.ID, reason: reason, waited: time.Duration(d.Waited)})
	c.sent[id] = append(c.sent[id], e.n.game.Redirect(room.Redirect{NodeID: to.ID, Reason: reason}))
	c.at[id], c.arrived[id] = to.ID, now
	c.mu.Unlock()

	// The client follows the redirect: the target takes the handoff.
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

func (e testEnv) Send(id string, p room.Packet) {
	c := e.n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at[id] == e.n.srv.ID() {
		c.sent[id] = append(c.sent[id], p)
	}
}

func (e testEnv) Connected(id string) bool { return e.n.c.where(id) == e.n.srv.ID() }

func (e testEnv) Seated(id string) bool { return e.n.host.RoomOf(id) != "" }

func (e testEnv) DrainPacket() room.Packet { return e.n.game.ServerDraining() }

func (e testEnv) Cooldown() time.Duration { return e.n.host.Config().MoveCooldown }

// freeSeats is the real one: the host is bound to the node's fleet.
func (e testEnv) FreeSeats() int {
	return hostEnv[*sim, int, string]{hostenv.Host[*sim, int, string]{H: e.n.host}}.FreeSeats()
}

func ptr[T any](v T) *T { return &v }
