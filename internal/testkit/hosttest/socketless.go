package hosttest

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/room"
)

// Socketless is N servers in one synctest bubble, each a fleet (all on one
// in-memory store) and a room host of Game with the module under test.
// Players are not connected through sockets: Players keeps where each one
// is connected, and a move writes the real handoff through the fleet and
// then delivers the player to the target's module, as a client following
// the redirect would.
type Socketless struct {
	*Players
	// Fleet is the servers' fleet.
	Fleet *fleettest.Cluster
	// Nodes are the servers, in the order of Fleet.Servers.
	Nodes []*Node

	mu    sync.Mutex
	moves []Move
}

// Node is one server of a Socketless cluster.
type Node struct {
	// C is the cluster.
	C *Socketless
	// Srv is the server's fleet.
	Srv *fleettest.Server
	// Game is the host's game.
	Game *Game
	// Host is the server's room host.
	Host *room.Host[*Sim, int, string]
	// OpenHook, when set, runs before each room is opened.
	OpenHook func(info room.Info)
	// MoveHook, when set, runs at the start of each move the module under
	// test makes from this server, before the handoff is written: a
	// backplane call that takes its time.
	MoveHook func(id string)
	// Arrive delivers a player moved here, with its handoff, to the module
	// under test, as its room.ArrivalHandler would. Attach sets it.
	Arrive func(ctx context.Context, id string, ho room.Handoff, now time.Time)
}

// Move is a move made by a module: player from one server to another.
type Move struct {
	Player, From, To, Reason string
	// Handoff is what the module wrote for the target.
	Handoff room.Handoff
}

// SocketlessOpts configures StartSocketless.
type SocketlessOpts struct {
	// Servers is the number of servers.
	Servers int
	// Fleet adjusts server i's fleet configuration, when set.
	Fleet func(i int, cfg *fleet.Config)
	// Server binds the hosts to their servers (load, drain).
	Server bool
	// MatchLen is the Game's MatchLen.
	MatchLen uint64
	// Attach adds the module under test to n.Host (Host.Use), gives it
	// n.Env() in place of the host, and sets n.Arrive.
	Attach func(n *Node) error
}

var quiet = slog.New(slog.DiscardHandler)

// StartSocketless starts the cluster in the current synctest bubble and
// waits until every server sees every other. Everything stops when the
// test ends.
func StartSocketless(t *testing.T, o SocketlessOpts) *Socketless {
	t.Helper()
	c := &Socketless{Players: NewPlayers(), Fleet: fleettest.Start(t, o.Servers, o.Fleet)}
	for _, s := range c.Fleet.Servers {
		n := &Node{C: c, Srv: s, Game: &Game{MatchLen: o.MatchLen}}
		h, err := room.New[*Sim, int, string](n.Game, room.Config{Secret: "shared"}, quiet)
		if err != nil {
			t.Fatal(err)
		}
		n.Host = h
		if err := o.Attach(n); err != nil {
			t.Fatal(err)
		}
		h.UseFleet(s.Fleet)
		if o.Server {
			h.UseServer(s.Fleet)
		}
		c.Nodes = append(c.Nodes, n)
		testrun.GoRun(t, h.Run) // runs the module's Run too
	}
	time.Sleep(fleettest.Heartbeat) // every server has beaten after all started
	synctest.Wait()
	for _, n := range c.Nodes {
		if got := len(n.Srv.Nodes()); got != o.Servers {
			t.Fatalf("%s sees %d servers, want %d", n.Srv.ID(), got, o.Servers)
		}
	}
	return c
}

// Node returns the server with id, or nil.
func (c *Socketless) Node(id string) *Node { return Find(c.Nodes, id) }

// Moves returns the moves made so far, oldest first.
func (c *Socketless) Moves() []Move {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.moves)
}

// MovesOf returns the moves of player id, oldest first.
func (c *Socketless) MovesOf(id string) []Move {
	return slices.DeleteFunc(c.Moves(), func(m Move) bool { return m.Player != id })
}

// ID returns n's node id.
func (n *Node) ID() string { return n.Srv.ID() }

// Find returns the node of nodes whose ID is id, or the zero N.
func Find[N interface{ ID() string }](nodes []N, id string) N {
	for _, n := range nodes {
		if n.ID() == id {
			return n
		}
	}
	var none N
	return none
}

// Env returns the room.ModuleHost the module under test is given: n's
// host, with players, moves and rooms going through the cluster.
func (n *Node) Env() room.ModuleHost { return env{n.Host, n} }

// env is the room.ModuleHost of a Node.
type env struct {
	*room.Host[*Sim, int, string] // the rest of room.ModuleHost
	n                             *Node
}

func (e env) Fleet() room.Fleet { return e.n.Srv.Fleet }

func (e env) MovePlayer(ctx context.Context, id string, to fleet.Node, reason string, ho *room.Handoff) error {
	if e.n.MoveHook != nil {
		e.n.MoveHook(id)
	}
	c, target := e.n.C, e.n.C.Node(to.ID)
	redirect := e.n.Game.Redirect(room.Redirect{NodeID: to.ID, Reason: reason})
	now, err := c.Players.Move(ctx, e.n.Srv, target.Srv, id, ho, e.n.Host.Config().MoveCooldown, redirect)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.moves = append(c.moves, Move{Player: id, From: e.n.Srv.ID(), To: to.ID, Reason: reason, Handoff: *ho})
	c.mu.Unlock()

	// The client follows the redirect: the target takes the handoff.
	got, err := TakeHandoff(ctx, target.Srv, id)
	if err != nil {
		return err
	}
	target.Arrive(ctx, id, got, now)
	return nil
}

func (e env) Open(ctx context.Context, info room.Info) error {
	if e.n.OpenHook != nil {
		e.n.OpenHook(info)
	}
	_, err := e.n.Host.OpenRoom(ctx, info)
	return err
}

func (e env) Send(id string, p room.Packet) { e.n.C.Send(e.n.Srv.ID(), id, p) }

func (e env) Connected(id string) bool { return e.n.C.Where(id) == e.n.Srv.ID() }

func (e env) DrainPacket() room.Packet { return e.n.Game.ServerDraining() }
