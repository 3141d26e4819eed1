package matchmaking

import (
	"slices"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/modkit"
	"github.com/muster-gg/muster/room"
)

// Release implements room.Releaser: at the end of a drain, a player who
// still waits here (it queued after the module's drain, within its move
// cooldown, or just before the drain's end) leaves the queue and takes its
// place along, with its waited time, as the drain's own hand-over does. A
// player being moved is the module's to move.
func (m *Module) Release(id string) (*room.Handoff, bool) {
	now := time.Now()
	m.mu.Lock()
	e := m.players[id]
	switch {
	case e == nil:
		m.mu.Unlock()
		return nil, false
	case e.state != waiting:
		m.mu.Unlock()
		return nil, true
	}
	d := e.handoff(now, m.kit.Self(), true)
	e.q.remove(e)
	delete(m.players, id)
	m.mu.Unlock()
	ho, _ := modkit.Encode(HandoffKind, d)
	return ho, false // nil if it does not encode
}

// handOver plans the hand-over of q's waiting players from this draining
// server to the first server of q's drain order each may be sent to (none
// when the decisions are local). A player with nowhere to go is told
// once, and waits on.
func (r *round) handOver(q *queue) {
	var order []fleet.Node
	if !r.local {
		// Where the playlist gathers first, as everyone else
		// computes it (see drainOrder).
		order = drainOrder(q, r.Nodes, r.Self)
	}
	for _, e := range q.waiting {
		to := slices.IndexFunc(order, func(n fleet.Node) bool { return !e.blocked(n.ID, r.Now) })
		switch {
		case to < 0:
			if !e.told {
				e.told = true
				r.tell = append(r.tell, e.id)
			}
		case r.movable(e, true):
			r.moves = append(r.moves, plannedMove{e: e, to: order[to], reason: room.ReasonDrain})
		}
	}
}

// tellRest tells the players still waiting at the drain timeout who were
// not told yet that the server drains.
func (m *Module) tellRest() {
	m.mu.Lock()
	var tell []string
	for _, e := range m.players {
		if !e.told {
			e.told = true
			tell = append(tell, e.id)
		}
	}
	m.mu.Unlock()
	m.kit.Tell(tell...)
}
