package lobby

import (
	"context"
	"errors"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/room"
)

// wait is a move refused for the cooldown, tried again when it is over:
// a join of a lobby on another server, or a creation sent away from a
// draining server.
type wait struct {
	id      string
	arrived time.Time
	code    string
	to      fleet.Node
	create  bool
}

// join adds player id to the lobby of code: here if it is here, or on the
// server that holds the code, where the player is sent with a handoff.
// It reports whether the code was wrong: malformed, or naming no lobby.
func (m *Module) join(ctx context.Context, id, raw string, arrived time.Time) (wrong bool) {
	code, ok := NormalizeCode(raw)
	if !ok {
		m.fail(id, ErrBadCode)
		return true
	}
	m.mu.Lock()
	if cur := m.players[id]; cur != nil {
		m.mu.Unlock()
		if cur.code != code {
			m.fail(id, ErrInLobby)
			return false
		}
		m.broadcast(cur)
		return false
	}
	if l := m.lobbies[code]; l != nil {
		err := m.addLocked(l, id, arrived)
		m.mu.Unlock()
		if err != nil {
			m.fail(id, err)
			return false
		}
		m.broadcast(l)
		return false
	}
	m.mu.Unlock()

	f := m.kit.Env.Fleet()
	if f == nil {
		m.fail(id, ErrNoLobby)
		return true
	}
	return m.locateAndMove(ctx, &wait{id: id, arrived: arrived, code: code})
}

// locateAndMove sends player w.id to the server holding lobby w.code. A
// lobby on a draining server is on its way elsewhere: the join waits and
// locates it again. It reports whether the fleet holds no such lobby.
func (m *Module) locateAndMove(ctx context.Context, w *wait) (wrong bool) {
	n, err := m.kit.Env.Fleet().Locate(ctx, fleet.KindLobby, w.code)
	return m.moveToHolder(ctx, w, n, err)
}

// moveToHolder sends player w.id to n, the server that holds lobby w.code
// as Locate answered (n, err), as locateAndMove says.
func (m *Module) moveToHolder(ctx context.Context, w *wait, n fleet.Node, err error) (wrong bool) {
	f := m.kit.Env.Fleet()
	switch {
	case err == nil && n.ID == f.ID() && m.kit.Draining():
		// Not here (join looked) but still claimed here: handed to
		// another server and not landed yet. Asked again next step.
		m.waitAgain(w)
		return false
	case errors.Is(err, fleet.ErrNotFound), err == nil && n.ID == f.ID():
		m.fail(w.id, ErrNoLobby)
		return true
	case err != nil:
		m.kit.Logger.Warn("locate lobby", "player_id", w.id, "code", w.code, "err", err)
		m.fail(w.id, ErrUnavailable)
		return false
	case n.State == fleet.StateDraining || n.State == fleet.StateLeaving:
		m.waitAgain(w)
		return false
	}
	w.to = n
	m.moveWait(ctx, w)
	return false
}

// moveWait tries a join or creation move; within the cooldown it waits
// for the next step.
func (m *Module) moveWait(ctx context.Context, w *wait) {
	d := handoff{Code: w.code, Role: RoleMember, Create: w.create, From: m.kit.Self()}
	reason := room.ReasonLobby
	if w.create {
		d.Role, reason = RoleHost, room.ReasonDrain
	}
	err := m.move(ctx, w.id, w.to, reason, d)
	switch {
	case err == nil, errors.Is(err, room.ErrGone):
	case errors.Is(err, room.ErrCooldown):
		m.waitAgain(w)
	default:
		m.kit.Logger.Warn("send a player to its lobby's server", "player_id", w.id, "code", w.code, "err", err)
		m.fail(w.id, ErrUnavailable)
	}
}

// waitAgain keeps w for the next step, unless its player is in a lobby
// here by now.
func (m *Module) waitAgain(w *wait) {
	m.mu.Lock()
	if m.players[w.id] == nil {
		m.waits[w.id] = w
	}
	m.mu.Unlock()
}

// move hands player id to server to with its lobby handoff d.
func (m *Module) move(ctx context.Context, id string, to fleet.Node, reason string, d handoff) error {
	return m.kit.Move(ctx, id, to, reason, HandoffKind, d)
}

// arrive takes a lobby handoff: a creation sent away from a draining
// server, a join, or a member of a whole lobby moved here.
func (m *Module) arrive(ctx context.Context, id string, ho room.Handoff, arrived, now time.Time) {
	var d handoff
	if !m.kit.Decode(id, ho, HandoffKind, &d) {
		return
	}
	if d.Create {
		m.create(ctx, id, arrived)
		return
	}
	if code, ok := NormalizeCode(d.Code); !ok || code != d.Code {
		m.kit.Logger.Warn("lobby handoff with a malformed code dropped", "player_id", id)
		return
	}
	m.mu.Lock()
	if cur := m.players[id]; cur != nil && cur.code != d.Code {
		m.mu.Unlock()
		m.fail(id, ErrInLobby)
		return
	}
	l := m.lobbies[d.Code]
	if d.Members == nil { // a join
		if l == nil {
			m.mu.Unlock()
			m.fail(id, ErrNoLobby)
			return
		}
		err := m.addLocked(l, id, arrived)
		m.mu.Unlock()
		if err != nil {
			m.fail(id, err)
			return
		}
		m.broadcast(l)
		return
	}
	if l == nil {
		m.mu.Unlock()
		if m.landedElsewhere(ctx, id, d, arrived) {
			return
		}
		m.mu.Lock()
		l = m.lobbies[d.Code] // another member may have landed it meanwhile
	}
	l, recreated := m.landLocked(l, id, d, arrived, now)
	m.mu.Unlock()
	if recreated {
		if f := m.kit.Env.Fleet(); f != nil {
			if err := f.Claim(ctx, fleet.KindLobby, d.Code); err != nil {
				m.kit.Logger.Warn("claim a lobby moved here; re-asserted when the backplane returns", "code", d.Code, "err", err)
			}
		}
		m.mu.Lock()
		l.held = true
		m.mu.Unlock()
	}
	m.broadcast(l)
}

// landedElsewhere reports whether lobby d.Code, which member id brought
// along to this server where the lobby is not, is already somewhere
// else: another member landed it on another server first (a draining
// server forwards each newcomer by its own id, and the lobby's old server
// may send a late member to another server than the first), or this
// draining server handed it on. The member then joins it there, as a
// join of the code does, rather than opening a second lobby under the
// code. A lobby the fleet locates on the server it left (d.From), on
// none, or not at all for an error, is re-created here.
func (m *Module) landedElsewhere(ctx context.Context, id string, d handoff, arrived time.Time) bool {
	f := m.kit.Env.Fleet()
	if f == nil {
		return false
	}
	n, err := f.Locate(ctx, fleet.KindLobby, d.Code)
	if err != nil || n.ID == d.From || (n.ID == f.ID() && !m.kit.Draining()) {
		return false
	}
	m.moveToHolder(ctx, &wait{id: id, arrived: arrived, code: d.Code}, n, nil)
	return true
}

// landLocked takes member id of lobby d.Code, moved here whole: the first
// member to arrive re-creates it (l is nil until then), with every member
// expected and the host it had, and reports that it did. m.mu must be
// held.
func (m *Module) landLocked(l *lobby, id string, d handoff, arrived, now time.Time) (_ *lobby, recreated bool) {
	if l == nil {
		l = &lobby{code: d.Code, host: d.Host}
		for _, mid := range d.Members {
			l.members = append(l.members, &member{id: mid, expect: now.Add(m.cfg.ArrivalTimeout)})
		}
		if l.member(d.Host) == nil {
			l.host = id
		}
		m.lobbies[d.Code] = l
		recreated = true
	}
	mem := l.member(id)
	if mem == nil {
		mem = &member{id: id}
		l.members = append(l.members, mem)
	}
	mem.present, mem.arrived, mem.expect, mem.moving = true, arrived, time.Time{}, false
	if d.Role == RoleHost {
		l.host = id
	}
	m.players[id] = l
	return l, recreated
}

// retry tries again a move that waited for the cooldown.
func (m *Module) retry(ctx context.Context, w *wait, draining bool, nodes []fleet.Node, self string) {
	if !w.create {
		m.join(ctx, w.id, w.code, w.arrived) // the lobby may be here by now
		return
	}
	if !draining {
		m.create(ctx, w.id, w.arrived)
		return
	}
	to, ok := drainTarget("create:"+w.id, nodes, self, "")
	if !ok {
		m.fail(w.id, ErrUnavailable)
		m.kit.Tell(w.id)
		return
	}
	w.to = to
	m.moveWait(ctx, w)
}
