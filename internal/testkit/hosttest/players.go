package hosttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
	"github.com/muster-gg/muster/room"
)

// Players stands in for the players' connections in tests that run
// modules on the servers of a fleettest.Cluster without sockets: it keeps
// which server each player is connected to, since when, and the packets
// sent to it. It is safe for concurrent use.
type Players struct {
	mu      sync.Mutex
	at      map[string]string    // player → server it is connected to
	arrived map[string]time.Time // player → when it connected there
	sent    map[string][]any     // player → packets sent to it
}

// NewPlayers returns Players with nobody connected.
func NewPlayers() *Players {
	return &Players{at: map[string]string{}, arrived: map[string]time.Time{}, sent: map[string][]any{}}
}

// Connect connects player id to server node now.
func (p *Players) Connect(node, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.at[id], p.arrived[id] = node, time.Now()
}

// Disconnect ends player id's connection.
func (p *Players) Disconnect(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.at, id)
}

// Where returns the server player id is connected to, or "".
func (p *Players) Where(id string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.at[id]
}

// Send records pk as sent to player id if it is connected to server node.
func (p *Players) Send(node, id string, pk room.Packet) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.at[id] == node {
		p.sent[id] = append(p.sent[id], pk)
	}
}

// Sent returns the packets sent to player id, oldest first.
func (p *Players) Sent(id string) []any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.sent[id])
}

// Move moves player id from server from to server to as room.Host.Move
// would, for a client that follows the redirect: it refuses a player not
// connected to from (room.ErrGone) or connected for less than
// cooldown (room.ErrCooldown), writes ho for to through from's fleet,
// records redirect as sent to the player and connects it to to. It
// returns the time the player arrived there; the test then delivers the
// handoff (TakeHandoff) to the module on to.
func (p *Players) Move(ctx context.Context, from, to *fleettest.Server, id string, ho *room.Handoff, cooldown time.Duration, redirect room.Packet) (time.Time, error) {
	p.mu.Lock()
	at, arrived := p.at[id], p.arrived[id]
	p.mu.Unlock()
	if at != from.ID() {
		return time.Time{}, room.ErrGone
	}
	if time.Since(arrived) < cooldown {
		return time.Time{}, room.ErrCooldown
	}
	data, err := json.Marshal(ho)
	if err != nil {
		return time.Time{}, err
	}
	if err := from.PutHandoff(ctx, to.ID(), id, data); err != nil {
		return time.Time{}, fmt.Errorf("move: %w", err)
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent[id] = append(p.sent[id], redirect)
	p.at[id], p.arrived[id] = to.ID(), now
	return now, nil
}

// TakeHandoff takes the handoff left for player id on server s, as the
// host does when the player arrives: the zero Handoff if there is none.
func TakeHandoff(ctx context.Context, s *fleettest.Server, id string) (room.Handoff, error) {
	var ho room.Handoff
	raw, err := s.TakeHandoff(ctx, id)
	switch {
	case errors.Is(err, fleet.ErrNotFound):
		return ho, nil
	case err != nil:
		return ho, err
	}
	err = json.Unmarshal(raw, &ho)
	return ho, err
}

// NopEnv is a room.ModuleHost with no fleet whose players are all connected:
// it opens rooms instantly, sends nothing and moves nobody
// (room.ErrNoRedirect). It suits fuzz tests and benchmarks of a module's
// own logic.
type NopEnv struct{}

// Fleet implements room.ModuleHost.
func (NopEnv) Fleet() room.Fleet { return nil }

// MovePlayer implements room.ModuleHost.
func (NopEnv) MovePlayer(context.Context, string, fleet.Node, string, *room.Handoff) error {
	return room.ErrNoRedirect
}

// Open implements room.ModuleHost.
func (NopEnv) Open(context.Context, room.Info) error { return nil }

// Send implements room.ModuleHost.
func (NopEnv) Send(string, room.Packet) {}

// Connected implements room.ModuleHost.
func (NopEnv) Connected(string) bool { return true }

// DrainPacket implements room.ModuleHost.
func (NopEnv) DrainPacket() room.Packet { return nil }

// Config implements room.ModuleHost: the zero Config.
func (NopEnv) Config() room.Config { return room.Config{} }

// Logger implements room.ModuleHost: a logger that discards.
func (NopEnv) Logger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// Codec implements room.ModuleHost: JSON.
func (NopEnv) Codec() room.Codec { return room.JSON{} }

// RoomOf implements room.ModuleHost: nobody is seated.
func (NopEnv) RoomOf(string) string { return "" }

// FreeLoad implements room.ModuleHost: no limit.
func (NopEnv) FreeLoad() int { return math.MaxInt }
