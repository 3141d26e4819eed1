package matchmaking

import (
	"context"
	"slices"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/modkit"
	"github.com/muster-gg/muster/room"
)

// round is the matching one step plans under m.mu, and carries out
// after.
type round struct {
	modkit.Moment
	selfNode fleet.Node // this server's entry in Nodes
	// seats is how many players this round may still seat here, from the
	// host's exact load: the published one lags (a second, then a
	// heartbeat), and one round can form many matches. A match counts as
	// its number of players, which is the load of its room unless the
	// game weighs rooms with its own LoadOf: then it is an approximation.
	// Rounds that form matches do not overlap (Run runs them one after
	// another; Drain's rounds match nobody), so the rooms of the earlier
	// rounds are all in the host's load.
	seats    int
	local    bool // every decision is local: no fleet, a fleet of one, or no redirect packet
	draining bool // the module drains, or the fleet says this server does

	matches []match
	moves   []plannedMove
	tell    []string // waiting players told that the server drains with nowhere to go
}

// step is one round at now: each playlist either forms matches here (this
// server gathers it, or the server is alone), or hands its waiting players
// to the server that gathers it, or, with no server with room, lets them
// wait. A server that gathers a playlist but has no room left for another
// of its matches hands the players still waiting to the next server in
// the playlist's gather order (F9, Q4), or, with none, lets them wait. A
// draining server hands everyone over. step returns the number of players
// still on this server's queues (waiting, being matched or moved).
func (m *Module) step(ctx context.Context, now time.Time) int {
	f := m.kit.Env.Fleet()
	r := m.newRound(now)
	m.plan(r, f)
	m.openAll(ctx, r.matches)
	m.moveAll(ctx, r.moves)
	m.kit.Tell(r.tell...)

	m.mu.Lock()
	defer m.mu.Unlock()
	if st, ok := f.(statSetter); ok {
		for _, q := range m.order {
			st.SetStat(q.stat, int64(len(q.waiting)))
		}
	}
	return len(m.players)
}

// newRound returns the round at now, with the fleet as this server sees
// it and the seats it has free.
func (m *Module) newRound(now time.Time) *round {
	r := &round{Moment: m.kit.Moment(now)}
	for _, n := range r.Nodes {
		if n.ID == r.Self {
			r.selfNode = n
		}
	}
	r.seats = max(m.kit.Env.FreeLoad(), 0)
	return r
}

// closing reports whether n is draining or leaving.
func closing(n fleet.Node) bool {
	return n.State == fleet.StateDraining || n.State == fleet.StateLeaving
}

// plan decides, for each playlist in turn, the matches formed here and
// the players handed to other servers, and takes the latter out of their
// queues (marked moving) with their handoffs.
func (m *Module) plan(r *round, f room.Fleet) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r.local = f == nil || len(r.Nodes) <= 1 || m.noRedirect
	// The server may be draining before its drainers are called.
	r.draining = m.kit.Draining() || closing(r.selfNode)
	for _, q := range m.order {
		switch {
		case r.draining:
			r.handOver(q)
		case r.local: // not draining, so this server may open rooms
			r.gather(q, nil) // no other server: those without room wait
		default:
			r.gatherOrForward(q)
		}
	}
	for i := range r.moves {
		mv := &r.moves[i]
		mv.ho = mv.e.handoff(r.Now, r.Self, r.draining)
	}
	for _, mv := range r.moves {
		mv.e.q.remove(mv.e)
		mv.e.state = moving
	}
}

// movable reports whether e may be handed over in this round: the host
// would move it (its cooldown is over, F7), and, unless the server
// drains, its hold is over.
func (r *round) movable(e *entry, draining bool) bool {
	if !r.Cooled.Over(e.arrived) {
		return false // the host refuses it (F7); try again later
	}
	return draining || !r.Now.Before(e.hold)
}

// gatherOrForward forms q's matches here if this server gathers q (first
// in its gather order, or sent its players lately and with room for a
// match), or else hands q's waiting players to the server that gathers
// it. With no server with room for a match, everyone waits where they
// are.
func (r *round) gatherOrForward(q *queue) {
	order := gatherOrder(q.pl.Name, q.pl.size(), r.Nodes, "")
	switch {
	case len(order) == 0:
		// No server has room for a match: everyone waits where
		// they are.
	case order[0].ID == r.Self, r.Now.Before(q.received) && roomFor(r.selfNode, q.pl.size()):
		r.gather(q, order)
	default:
		for _, e := range q.waiting {
			// A player is not sent back to where it came from
			// while that may be a stale view: it waits here.
			if r.movable(e, false) && !e.blocked(order[0].ID, r.Now) {
				r.moves = append(r.moves, plannedMove{e: e, to: order[0], reason: room.ReasonQueue})
			}
		}
	}
}

// gather forms the matches of q that fit in the round's seats. Without
// room for one more, the players still waiting overflow to the first
// server of order, q's gather order, that is not this one and that they
// may be sent to; with none, they wait.
func (r *round) gather(q *queue, order []fleet.Node) {
	before := len(r.matches)
	r.matches = q.match(r.Now, r.matches, r.seats)
	r.seats -= (len(r.matches) - before) * q.pl.size()
	if r.seats >= q.pl.size() {
		return
	}
	for _, e := range q.waiting {
		to := slices.IndexFunc(order, func(n fleet.Node) bool { return n.ID != r.Self && !e.blocked(n.ID, r.Now) })
		if to >= 0 && r.movable(e, false) {
			r.moves = append(r.moves, plannedMove{e: e, to: order[to], reason: room.ReasonQueue})
		}
	}
}

// openAll opens the rooms of matches. They are opened together
// (modkit.Each): each claims its players for the fleet, a backplane call
// that may wait for its deadline, and the queue waits behind them.
func (m *Module) openAll(ctx context.Context, matches []match) {
	modkit.Each(maxOpening, matches, func(_ int, mt match) { m.open(ctx, mt) })
}

// maxOpening bounds the rooms one round opens at once, and the players it
// hands to other servers at once, so that a burst of them does not take
// from the heartbeat every connection to Redis (go-redis keeps ten per
// CPU): k matches wait at most k/maxOpening call deadlines, rounded up,
// for their rooms while Redis stalls, and so does a round's queue behind
// k hand-overs.
const maxOpening = 8

// open opens the room of a match. If the host refuses, the players who
// are still connected and not seated elsewhere wait on, in their place.
func (m *Module) open(ctx context.Context, mt match) {
	ids := make([]string, 0, len(mt.players))
	for _, t := range mt.teams {
		ids = append(ids, t...)
	}
	err := m.kit.Env.Open(ctx, room.Info{Kind: mt.q.pl.Name, Players: ids, Data: Match{Playlist: mt.q.pl.Name, Teams: mt.teams}})
	if err != nil {
		m.kit.Logger.Warn("open match room; players wait on", "playlist", mt.q.pl.Name, "err", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range mt.players {
		if err == nil || !m.kit.Env.Connected(e.id) || (m.kit.Env.RoomOf(e.id) != "") || m.players[e.id] != e {
			m.forget(e)
			continue
		}
		mt.q.add(e)
	}
}
