package room

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/muster-gg/muster/fleet"
)

// Server is what UseServer binds: capacity and drain. *fleet.Fleet
// implements it.
type Server interface {
	SetLoad(load int)
	SetStat(name string, value int64)
	// Publish writes the load and stats set so far to the fleet now.
	Publish(ctx context.Context) error
	Draining() bool
	AddDrainer(d fleet.Drainer)
}

// Fleet is what UseFleet binds: player claims, rejoin from anywhere and
// handoffs. *fleet.Fleet implements it.
type Fleet interface {
	ID() string
	Config() fleet.Config
	Alone() bool
	Nodes() []fleet.Node
	Claim(ctx context.Context, kind string, ids ...string) error
	Release(ctx context.Context, kind string, ids ...string) error
	// ReleaseLater releases claims without I/O on the caller: the fleet
	// writes them, batched, from its own goroutine. Modules use it on
	// step workers; the host calls it from its own goroutine, for the
	// seats its workers gave up.
	ReleaseLater(kind string, ids ...string)
	// Holds reports whether this server holds the claim on kind/id.
	Holds(kind, id string) bool
	// OnClaimLost sets the function told of claims another server took
	// over at re-assertion.
	OnClaimLost(fn func(kind, id string))
	Locate(ctx context.Context, kind, id string) (fleet.Node, error)
	Arrive(ctx context.Context, kind, id string) (holder fleet.Node, handoff []byte, err error)
	PutHandoff(ctx context.Context, target, id string, data []byte) error
	// TakeHandoffFor takes the handoff written for server target under
	// id (a client that asked for target and was served here).
	TakeHandoffFor(ctx context.Context, target, id string) ([]byte, error)
	Increment(ctx context.Context, key string, ttl time.Duration, by int64) (int64, error)
	// Connect claims a player's connection, over whoever held it.
	Connect(ctx context.Context, id string) error
	// ClaimFree claims the ids no other live server holds and returns
	// those another does.
	ClaimFree(ctx context.Context, kind string, ids ...string) (held []string, err error)
}

// Use adds a module. Its message types must not clash with another's.
// Call Use before Run.
//
// Use refuses (with an error wrapping ErrModuleHook, before Attach) a
// module with a method named like one of an optional module interface's
// (Runner, MessageHandler, ArrivalHandler, DisconnectHandler,
// RoomEndHandler, RoomWatcher, Releaser, RoomMover, fleet.Drainer,
// fleet.LastDrainer) that does not implement it: of another signature,
// declared on *T for a module passed as a T, or without the interface's
// other method. The host would never call it. The error names the
// module's type, the method, its signature and the one wanted.
func (h *Host[Sim, Input, Player]) Use(m Module) error {
	if err := checkModuleHooks(m); err != nil {
		return err
	}
	if mh, ok := m.(MessageHandler); ok {
		for _, typ := range mh.MessageTypes() {
			if typ == msgHello || typ == msgInput || h.routes[typ] != nil {
				return fmt.Errorf("room: Use: message type %q is taken", typ)
			}
			h.routes[typ] = mh
		}
	}
	if err := m.Attach(h); err != nil {
		return fmt.Errorf("room: Use: %w", err)
	}
	h.modules = append(h.modules, m)
	if w, ok := m.(RoomWatcher); ok {
		h.watchers = append(h.watchers, w)
	}
	if h.server != nil {
		if d, ok := m.(fleet.Drainer); ok {
			h.server.AddDrainer(d)
		}
	}
	return nil
}

// UseServer binds capacity and drain: the host reports its load, opens no
// room while draining, lets running rooms finish (rejoins still work), and
// at the drain timeout tells their players (the game's ServerDraining) and
// closes them after the grace; last, once every part of the drain is done,
// it sends the players still connected in no room to another server (with
// a fleet bound). Modules that drain are added to s too.
func (h *Host[Sim, Input, Player]) UseServer(s Server) {
	h.server = s
	s.AddDrainer(hostDrainer[Sim, Input, Player]{h})
	for _, m := range h.modules {
		if d, ok := m.(fleet.Drainer); ok {
			s.AddDrainer(d)
		}
	}
}

// UseFleet binds the fleet: players seated here are claimed, a player who
// connects to the wrong server is sent to the one running its room,
// handoffs are taken on arrival, and tickets, rate limits and lockouts
// are counted once for the whole fleet. Tickets are bound to the fleet's
// cluster: the servers of another cluster refuse them.
//
// A player whose claim another server took over (the fleet found it at
// re-assertion, after this server was cut off or frozen) is removed from
// its room here as if it had left, and told so (room_end, reason "left").
// A player whose newer connection another server accepted is closed here
// (StatusReplaced) within one heartbeat.
func (h *Host[Sim, Input, Player]) UseFleet(f Fleet) {
	h.fleet = f
	f.OnClaimLost(func(kind, id string) {
		switch kind {
		case fleet.KindPlayer:
			h.claimLost(id)
		case fleet.KindConn:
			h.connLost(id)
		}
	})
	h.tickets.bind(h.cfg.Secret, f.Config().Cluster, f)
	if h.cfg.Limits.Store == StoreBackplane {
		h.limits.counter = f
	}
}

// Fleet returns the bound fleet, or nil.
func (h *Host[Sim, Input, Player]) Fleet() Fleet { return h.fleet }

// Send sends p to player id if it is connected here.
func (h *Host[Sim, Input, Player]) Send(id string, p Packet) {
	h.mu.Lock()
	c := h.clients[id]
	h.mu.Unlock()
	if c != nil {
		c.Send(p)
	}
}

// Connected reports whether player id is connected to this host.
func (h *Host[Sim, Input, Player]) Connected(id string) bool {
	_, ok := h.Client(id)
	return ok
}

// MovePlayer implements ModuleHost: Move for the connection of player id,
// or ErrGone.
func (h *Host[Sim, Input, Player]) MovePlayer(ctx context.Context, id string, to fleet.Node, reason string, ho *Handoff) error {
	c, ok := h.Client(id)
	if !ok {
		return ErrGone
	}
	return h.Move(ctx, c, to, reason, ho)
}

// Open implements ModuleHost: OpenRoom without the room.
func (h *Host[Sim, Input, Player]) Open(ctx context.Context, info Info) error {
	_, err := h.OpenRoom(ctx, info)
	return err
}

// FreeLoad implements ModuleHost.
func (h *Host[Sim, Input, Player]) FreeLoad() int {
	if h.fleet == nil {
		return math.MaxInt
	}
	limit := h.fleet.Config().MaxLoad
	if limit <= 0 {
		return math.MaxInt
	}
	return limit - h.Load()
}

// Client returns the connection of player id on this host.
func (h *Host[Sim, Input, Player]) Client(id string) (*Client, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.clients[id]
	return c, ok
}

var _ ModuleHost = (*Host[struct{}, struct{}, struct{}])(nil)
