package lobby

import (
	"context"
	"errors"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/modkit"
	"github.com/muster-gg/muster/room"
)

// Release implements room.Releaser: at the end of a drain, a creation
// still waiting here (asked for within the player's move cooldown, or
// just before the drain's end) goes along and is made on the player's
// next server; a join still waiting for its lobby to land is dropped (the
// player joins again there). A member being moved with its lobby, or a
// player whose waiting move a step is trying now, is the module's to
// move.
func (m *Module) Release(id string) (*room.Handoff, bool) {
	m.mu.Lock()
	w := m.waits[id]
	delete(m.waits, id)
	moving := m.retrying[id] // a step is moving it (or failing it) now
	if l := m.players[id]; l != nil {
		if mem := l.member(id); mem != nil && mem.moving {
			moving = true
		}
	}
	m.mu.Unlock()
	if moving || w == nil || !w.create {
		return nil, moving
	}
	ho, _ := modkit.Encode(HandoffKind, handoff{Role: RoleHost, Create: true, From: m.kit.Self()})
	return ho, false // nil if it does not encode
}

// lobbyMove is a member to hand to another server with its lobby.
type lobbyMove struct {
	l   *lobby
	mem *member
	to  fleet.Node
	d   handoff
}

// planDrainLocked plans the move of open lobby l from this draining
// server: each present member whose cooldown is over is handed, with the
// code, its role, the host and the members, to the server l moves to.
// With nowhere to go, its members are told once; with nobody here left
// to move, l is closed here. m.mu must be held.
func (m *Module) planDrainLocked(r *round, l *lobby) {
	present, handed := false, false
	for _, mem := range l.members {
		present = present || mem.present
		handed = handed || mem.handed
	}
	if !present { // all handed over, or nobody here to move
		delete(m.lobbies, l.code)
		for _, mem := range l.members {
			if m.players[mem.id] == l {
				delete(m.players, mem.id)
			}
		}
		if !handed {
			r.closed = append(r.closed, l.code)
		}
		// A lobby handed over keeps its claim here until the first
		// member to arrive claims it on the target (or this server
		// leaves the fleet): a code typed meanwhile locates this
		// draining server, and the join waits for the lobby to land.
		return
	}
	to, ok := drainTarget("lobby:"+l.code, r.Nodes, r.Self, l.target)
	if !ok {
		if !l.told {
			l.told = true
			r.tell = append(r.tell, l.present()...)
		}
		return
	}
	l.target = to.ID
	ids := l.ids()
	for _, mem := range l.members {
		if mem.present && !mem.moving && r.Cooled.Over(mem.arrived) {
			role := RoleMember
			if mem.id == l.host {
				role = RoleHost
			}
			mem.moving = true
			r.moves = append(r.moves, lobbyMove{l: l, mem: mem, to: to, d: handoff{Code: l.code, Role: role, Host: l.host, Members: ids, From: r.Self}})
		}
	}
}

// moveMembers hands the members of moves to their lobbies' targets. The
// members move together (modkit.Each): each move writes the member's
// handoff, a backplane call that may wait for its deadline.
func (m *Module) moveMembers(ctx context.Context, moves []lobbyMove) {
	modkit.Each(maxMoving, moves, func(_ int, mv lobbyMove) {
		m.finishMove(mv, m.move(ctx, mv.mem.id, mv.to, room.ReasonDrain, mv.d))
	})
}

// maxMoving bounds the members a drain step moves at once: k members wait
// at most k/maxMoving call deadlines, rounded up, while Redis stalls, and
// the moves leave most of go-redis's connections to the heartbeat and the
// rooms.
const maxMoving = 8

// finishMove records how the drain move mv ended.
func (m *Module) finishMove(mv lobbyMove, err error) {
	m.mu.Lock()
	switch {
	case err == nil || errors.Is(err, room.ErrGone) || !m.kit.Env.Connected(mv.mem.id):
		// Moved (or gone): its place is on the target now. The lobby
		// is closed here once nobody is left to move.
		mv.mem.moving, mv.mem.present, mv.mem.handed = false, false, true
		if m.players[mv.mem.id] == mv.l {
			delete(m.players, mv.mem.id)
		}
	default:
		mv.mem.moving = false // keeps its place; tried again next step
		if !errors.Is(err, room.ErrCooldown) {
			m.kit.Logger.Warn("hand a lobby member to another server", "player_id", mv.mem.id, "code", mv.l.code, "err", err)
		}
	}
	m.mu.Unlock()
}

// tellRest tells the members of the lobbies still here at the drain
// timeout, who were not told yet, that the server drains.
func (m *Module) tellRest() {
	m.mu.Lock()
	var tell []string
	for _, l := range m.lobbies {
		if l.told {
			continue
		}
		l.told = true
		tell = append(tell, l.present()...)
	}
	m.mu.Unlock()
	m.kit.Tell(tell...)
}

// drainTarget picks the server a draining server sends key to: the one it
// picked before (prev) while it still has room, or else the best by
// rendezvous hashing of key among the servers with room, this one
// (self) excepted.
func drainTarget(key string, nodes []fleet.Node, self, prev string) (fleet.Node, bool) {
	ranked := fleet.Ranked(key, nodes, func(n fleet.Node) bool { return n.HasRoom() && n.ID != self })
	for _, n := range ranked {
		if n.ID == prev {
			return n, true
		}
	}
	if len(ranked) == 0 {
		return fleet.Node{}, false
	}
	return ranked[0], true
}
