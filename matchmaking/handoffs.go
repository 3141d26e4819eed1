package matchmaking

import (
	"context"
	"errors"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/modkit"
	"github.com/muster-gg/muster/room"
)

// arrive takes a queue handoff: the player waits on here, its start
// back-dated by the time it waited elsewhere, and this server gathers the
// playlist for a while, since another server thinks it should.
func (m *Module) arrive(id string, ho room.Handoff, arrived, now time.Time) {
	var d handoff
	if !m.kit.Decode(id, ho, HandoffKind, &d) {
		return
	}
	d.Waited = min(max(d.Waited, 0), int64(maxWaited)) // from another server: keep it sane
	hold, back := m.hold(), m.backGuard()
	m.mu.Lock()
	q := m.queues[d.Playlist]
	if q == nil {
		m.mu.Unlock()
		m.kit.Logger.Warn("queue handoff for a playlist this server does not have", "player_id", id, "playlist", d.Playlist)
		m.fail(id, ErrUnknownPlaylist)
		return
	}
	if old := m.players[id]; old != nil && old.state == waiting {
		old.q.remove(old)
		delete(m.players, id)
	}
	e := &entry{
		id: id, rating: d.Rating, since: now.UnixNano() - d.Waited,
		arrived: arrived, hold: now.Add(hold), from: d.From,
		back: now.Add(back), never: d.Drain,
	}
	q.add(e)
	m.players[id] = e
	if until := now.Add(hold); until.After(q.received) {
		q.received = until
	}
	m.mu.Unlock()
	m.kit.Env.Send(id, WaitingPacket{Type: TypeWaiting, Playlist: d.Playlist, WaitedMS: d.Waited / 1e6, Node: m.kit.Self()})
	m.kickRun()
}

// hold is Config.Hold, or two fleet heartbeats.
func (m *Module) hold() time.Duration {
	if m.cfg.Hold > 0 {
		return m.cfg.Hold
	}
	if f := m.kit.Env.Fleet(); f != nil {
		return 2 * f.Config().Heartbeat
	}
	return 0
}

// maxWaited bounds the waited time a handoff may carry.
const maxWaited = 24 * time.Hour

// backGuard is how long a player who arrived with a queue handoff is not
// sent back to the server it came from: as long as a server can stay in a
// view after it stopped answering (fleet.MissedHeartbeats heartbeats), so
// that a view that still shows the sender as the gather server, after
// Hold, cannot bounce the player back.
func (m *Module) backGuard() time.Duration {
	if f := m.kit.Env.Fleet(); f != nil {
		return max(m.hold(), fleet.MissedHeartbeats*f.Config().Heartbeat)
	}
	return m.hold()
}

// blocked reports whether e may not be sent to node at now: the server
// that handed it here, recently or while draining.
func (e *entry) blocked(node string, now time.Time) bool {
	return node == e.from && (e.never || now.Before(e.back))
}

// plannedMove is a player to hand to another server.
type plannedMove struct {
	e      *entry
	to     fleet.Node
	reason string
	ho     handoff
}

// errSeatedMeanwhile marks a planned move of a player seated since it was
// planned: it is dropped from the queue, not moved.
var errSeatedMeanwhile = errors.New("matchmaking: seated meanwhile")

// moveAll hands each player to its target: handoff first, then redirect.
// A player whose move fails keeps its place.
func (m *Module) moveAll(ctx context.Context, moves []plannedMove) {
	// The moves are made together, as the rooms are opened (modkit.Each):
	// each writes a handoff first, a backplane call that may wait for its
	// deadline.
	errs := make([]error, len(moves)) // each move's error is its own
	modkit.Each(maxOpening, moves, func(i int, mv plannedMove) {
		if m.kit.Env.RoomOf(mv.e.id) != "" { // seated meanwhile (a lobby's match): not ours to move
			errs[i] = errSeatedMeanwhile
			return
		}
		// The time waited is counted now, not when the round was
		// planned: a move behind others waited for their backplane calls
		// (while Redis stalls, a deadline a batch), and its player waited
		// here meanwhile (Q3). Nothing else changes an entry's since.
		ho := mv.ho
		ho.Waited = int64(mv.e.waited(time.Now()))
		errs[i] = m.kit.Move(ctx, mv.e.id, mv.to, mv.reason, HandoffKind, ho)
	})
	var failed int
	var firstErr error
	for i, mv := range moves {
		if m.settle(mv, errs[i]) {
			failed++
			if firstErr == nil {
				firstErr = errs[i]
			}
		}
	}
	m.noteFailures(failed, len(moves), firstErr)
}

// settle records how the move mv ended (err): a player moved, gone,
// seated meanwhile or replaced by a newer entry is forgotten here; one
// whose move failed keeps its place while it is connected. It reports
// whether err is a failure to log: neither the move cooldown nor, the
// first time, the game's lack of a redirect packet.
func (m *Module) settle(mv plannedMove, err error) (failed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case err == nil, err == errSeatedMeanwhile, errors.Is(err, room.ErrGone), m.players[mv.e.id] != mv.e:
		m.forget(mv.e)
		return false
	}
	if errors.Is(err, room.ErrNoRedirect) && !m.noRedirect {
		m.noRedirect = true
		m.kit.Logger.Info("the game sends no redirect packet; queues stay on every server")
	} else if !errors.Is(err, room.ErrCooldown) {
		failed = true
	}
	if m.kit.Env.Connected(mv.e.id) {
		mv.e.q.add(mv.e)
	} else {
		m.forget(mv.e)
	}
	return failed
}

// noteFailures logs a streak of failing hand-overs once, when a round of
// n moves has the first failures (failed, the first of them firstErr),
// and its end, when a round has none.
func (m *Module) noteFailures(failed, n int, firstErr error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case failed > 0 && !m.failing:
		m.failing = true
		m.kit.Logger.Warn("hand queue places to other servers; the players keep their place", "players", failed, "err", firstErr)
	case failed == 0 && n > 0 && m.failing:
		m.failing = false
		m.kit.Logger.Info("queue hand-overs work again")
	}
}
