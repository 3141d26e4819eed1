package hosttest

import (
	"encoding/json"
	"sync"

	"github.com/muster-gg/muster/room"
)

// Sim is the simulation of a Game's room: empty.
type Sim struct{}

// Game is a test game with int inputs and the player id as player. Its
// rooms end by themselves after MatchLen steps (never when 0). It
// redirects with {"type":"redirect","node","param","reason"} and tells the
// players of a draining server {"type":"server_draining"}.
type Game struct {
	// MatchLen is the number of steps after which a room ends; 0 means
	// never.
	MatchLen uint64
	// States, when set, has every pass of a room send its players
	// {"type":"state","room","step"}.
	States bool

	mu    sync.Mutex
	ended int
}

// Ended returns the number of rooms that ended by themselves.
func (g *Game) Ended() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ended
}

// NewSim implements room.Game.
func (g *Game) NewSim(room.Info) *Sim { return &Sim{} }

// Join implements room.Game.
func (g *Game) Join(_ *room.Room[*Sim, int, string], id string) string { return id }

// Leave implements room.Game.
func (g *Game) Leave(*room.Room[*Sim, int, string], string) {}

// Input implements room.Game.
func (g *Game) Input(*room.Room[*Sim, int, string], string, int) {}

// FixedStep implements room.Game: it ends the room at step MatchLen.
func (g *Game) FixedStep(r *room.Room[*Sim, int, string]) {
	if g.MatchLen > 0 && r.Step() == g.MatchLen {
		g.mu.Lock()
		g.ended++
		g.mu.Unlock()
		r.End("match over")
	}
}

// AfterSteps implements room.AfterStepper: the state, when States is set.
func (g *Game) AfterSteps(r *room.Room[*Sim, int, string]) {
	if g.States {
		r.Broadcast(map[string]any{"type": "state", "room": r.ID(), "step": r.Step()})
	}
}

// Redirect implements room.Game.
func (g *Game) Redirect(r room.Redirect) room.Packet {
	return map[string]string{"type": "redirect", "node": r.NodeID, "param": r.NodeParam, "reason": r.Reason}
}

// ServerDraining implements room.DrainNotifier.
func (g *Game) ServerDraining() room.Packet { return map[string]string{"type": "server_draining"} }

// Migrating is a Game whose rooms move (room.Migrator): its snapshot is
// the room's players.
type Migrating struct{ *Game }

// Snapshot implements room.Migrator.
func (Migrating) Snapshot(r *room.Room[*Sim, int, string]) ([]byte, error) {
	return json.Marshal(r.Players())
}

// Restore implements room.Migrator.
func (Migrating) Restore(_ room.Info, data []byte) (*Sim, map[string]string, error) {
	var ids []string
	if err := json.Unmarshal(data, &ids); err != nil {
		return nil, nil, err
	}
	players := make(map[string]string, len(ids))
	for _, id := range ids {
		players[id] = id
	}
	return &Sim{}, players, nil
}
