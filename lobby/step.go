package lobby

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/modkit"
)

// round is the housekeeping one step plans under m.mu, and carries out
// after.
type round struct {
	modkit.Moment
	draining bool // as it was when the round was planned

	retry   []*wait     // moves whose cooldown is over, first come first
	changed []*lobby    // lobbies that dropped a member who never arrived
	closed  []string    // codes of lobbies closed here, to release
	moves   []lobbyMove // members to hand to another server with their lobby
	tell    []string    // members told that the server drains with nowhere to go
}

// step is one round of housekeeping at now: moves that waited for the
// cooldown, members who never arrived, and, while draining, lobbies handed
// to other servers. It returns the number of lobbies and waiting moves
// still here.
func (m *Module) step(ctx context.Context, now time.Time) int {
	r := m.plan(now)
	for _, code := range r.closed {
		m.release(ctx, code)
	}
	for _, l := range r.changed {
		m.broadcast(l)
	}
	m.retryAll(ctx, r)
	m.moveMembers(ctx, r.moves)
	m.kit.Tell(r.tell...)
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.lobbies) + len(m.waits)
}

// plan decides the round at now: it takes the moves whose cooldown is
// over, drops the members who never arrived, and, while draining, plans
// each open lobby's move.
func (m *Module) plan(now time.Time) *round {
	r := &round{Moment: m.kit.Moment(now)}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.takeCooledLocked(r)
	codes := make([]string, 0, len(m.lobbies))
	for code := range m.lobbies {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	for _, code := range codes {
		l := m.lobbies[code]
		if m.dropUnarrivedLocked(r, l) || m.takenOverLocked(l) {
			continue
		}
		if !m.kit.Draining() || l.room != "" {
			continue // a running match's lobby moves when its room ends
		}
		m.planDrainLocked(r, l)
	}
	r.draining = m.kit.Draining()
	return r
}

// takeCooledLocked takes out of m.waits the moves whose cooldown is over,
// into r.retry, first come first, and marks them being retried. m.mu must
// be held.
func (m *Module) takeCooledLocked(r *round) {
	for id, w := range m.waits {
		if r.Cooled.Over(w.arrived) {
			r.retry = append(r.retry, w)
			delete(m.waits, id)
			m.retrying[id] = true
		}
	}
	slices.SortFunc(r.retry, func(a, b *wait) int { // first come, first moved
		if c := a.arrived.Compare(b.arrived); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
}

// takenOverLocked gives up open lobby l if another server's claim on its
// code replaced this one's (both re-created it from one move at once, and
// the other's claim was written last; the fleet's re-assertion found it),
// and reports whether it did. Its members here join the lobby there, each
// as a join of the code once its move cooldown is over. The code is not
// released: it is the other server's. m.mu must be held.
func (m *Module) takenOverLocked(l *lobby) bool {
	f := m.kit.Env.Fleet()
	if f == nil || !l.held || l.room != "" || f.Holds(fleet.KindLobby, l.code) {
		return false
	}
	delete(m.lobbies, l.code)
	for _, mem := range l.members {
		if m.players[mem.id] == l {
			delete(m.players, mem.id)
		}
		if mem.present && !mem.moving {
			m.waits[mem.id] = &wait{id: mem.id, arrived: mem.arrived, code: l.code}
		}
	}
	m.kit.Logger.Info("lobby code taken over by another server; its members join there", "code", l.code)
	return true
}

// dropUnarrivedLocked removes from l the members moved with it who did
// not arrive in time, and reports whether that closed l. m.mu must be
// held.
func (m *Module) dropUnarrivedLocked(r *round, l *lobby) (closed bool) {
	dropped, gone := false, false
	for _, mem := range slices.Clone(l.members) {
		if !mem.present && !mem.expect.IsZero() && r.Now.After(mem.expect) {
			dropped = true
			gone = m.removeLocked(l, mem.id)
		}
	}
	switch {
	case gone:
		r.closed = append(r.closed, l.code)
	case dropped:
		r.changed = append(r.changed, l)
	}
	return gone
}

// retryAll tries again the moves whose cooldown is over.
func (m *Module) retryAll(ctx context.Context, r *round) {
	for _, w := range r.retry {
		m.retry(ctx, w, r.draining, r.Nodes, r.Self)
		m.mu.Lock()
		delete(m.retrying, w.id)
		m.mu.Unlock()
	}
}
