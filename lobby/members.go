package lobby

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/muster-gg/muster/room"
)

// lobby is one lobby on this server. It is guarded by the module's
// mutex, but for sending.
type lobby struct {
	// sending is held while a state is taken and sent, so that the
	// states of a lobby reach each member in the order they were taken.
	// It is taken before m.mu, never while holding it.
	sending sync.Mutex

	code    string
	host    string
	members []*member // in the order they joined
	room    string    // the running match, "" when open
	target  string    // while draining: the server it moves to
	told    bool      // told that the server drains with nowhere to go
	// held is set once this server claimed the code (the claim may be
	// written later, re-asserted): a lobby held no longer was taken
	// over by another server.
	held bool
}

// member is a player in a lobby, connected here or not.
type member struct {
	id      string
	present bool      // connected here
	arrived time.Time // when it connected here (the move cooldown)
	expect  time.Time // moved here with its lobby, not arrived yet: dropped after
	moving  bool      // being handed to another server
	handed  bool      // handed to another server with its lobby
}

// create makes a lobby with player id as its host, under a code claimed
// for this server in the whole fleet. A draining server sends the player
// to another server to create it there.
func (m *Module) create(ctx context.Context, id string, arrived time.Time) {
	m.mu.Lock()
	switch {
	case m.players[id] != nil:
		m.mu.Unlock()
		m.fail(id, ErrInLobby)
		return
	case m.kit.Draining():
		m.waits[id] = &wait{id: id, arrived: arrived, create: true}
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()

	code, err := m.claim(ctx)
	if err != nil {
		m.kit.Logger.Warn("claim a lobby code", "player_id", id, "err", err)
		m.fail(id, ErrUnavailable)
		return
	}
	m.mu.Lock()
	delete(m.reserved, code)
	if m.players[id] != nil { // created or joined another meanwhile
		m.mu.Unlock()
		m.release(ctx, code)
		m.fail(id, ErrInLobby)
		return
	}
	l := &lobby{code: code, host: id, members: []*member{{id: id, present: true, arrived: arrived}}, held: true}
	m.lobbies[code], m.players[id] = l, l
	m.mu.Unlock()
	m.broadcast(l)
}

// leave takes player id out of its lobby.
func (m *Module) leave(ctx context.Context, id string) {
	m.mu.Lock()
	delete(m.waits, id)
	l := m.players[id]
	if l == nil {
		m.mu.Unlock()
		m.fail(id, ErrNotInLobby)
		return
	}
	closed := m.removeLocked(l, id)
	m.mu.Unlock()
	m.kit.Env.Send(id, LeftPacket{Type: TypeLeft, Code: l.code})
	m.closedOrChanged(ctx, l, closed)
}

// start opens a room for the present members of player id's lobby, if id
// is its host.
func (m *Module) start(ctx context.Context, id string) {
	m.mu.Lock()
	l := m.players[id]
	var err error
	switch {
	case l == nil:
		err = ErrNotInLobby
	case l.host != id:
		err = ErrNotHost
	case l.room != "":
		err = ErrPlaying
	}
	if err != nil {
		m.mu.Unlock()
		m.fail(id, err)
		return
	}
	ids := l.present()
	m.nextRoom++
	// Codes come back once their lobbies end, so the tag keeps a room's
	// id unique across the fleet and over restarts, as the host's are.
	rid := fmt.Sprintf("lobby-%s-%d-%s", l.code, m.nextRoom, m.roomTag)
	l.room, m.rooms[rid] = rid, l
	info := room.Info{ID: rid, Kind: m.cfg.RoomKind, Players: ids, Data: Match{Code: l.code, Host: l.host, Members: ids}}
	m.mu.Unlock()

	if err := m.kit.Env.Open(ctx, info); err != nil {
		m.mu.Lock()
		delete(m.rooms, rid)
		if l.room == rid {
			l.room = ""
		}
		m.mu.Unlock()
		m.fail(id, fmt.Errorf("lobby.start: %w", err))
		return
	}
	m.broadcast(l)
}

// addLocked adds player id to l as a present member. m.mu must be held.
func (m *Module) addLocked(l *lobby, id string, arrived time.Time) error {
	if mem := l.member(id); mem != nil {
		mem.present, mem.arrived, mem.expect = true, arrived, time.Time{}
		m.players[id] = l
		return nil
	}
	if len(l.members) >= m.cfg.MaxMembers {
		return ErrFull
	}
	l.members = append(l.members, &member{id: id, present: true, arrived: arrived})
	m.players[id] = l
	return nil
}

// removeLocked removes member id from l; a new host is chosen if it was
// the host: the first present member in join order, or else the first
// member. It reports whether the lobby closed (no member left). m.mu must
// be held.
func (m *Module) removeLocked(l *lobby, id string) (closed bool) {
	l.members = slices.DeleteFunc(l.members, func(mem *member) bool { return mem.id == id })
	if m.players[id] == l {
		delete(m.players, id)
	}
	if l.host == id {
		l.host = ""
		for _, mem := range l.members {
			if mem.present {
				l.host = mem.id
				break
			}
		}
		if l.host == "" && len(l.members) > 0 {
			l.host = l.members[0].id
		}
	}
	if len(l.members) > 0 {
		return false
	}
	if m.lobbies[l.code] == l {
		delete(m.lobbies, l.code)
	}
	return true
}

// closedOrChanged releases the code of a closed lobby, or sends the new
// state of a changed one.
func (m *Module) closedOrChanged(ctx context.Context, l *lobby, closed bool) {
	if closed {
		m.release(ctx, l.code)
		return
	}
	m.broadcast(l)
}

// member returns member id of l, or nil.
func (l *lobby) member(id string) *member {
	for _, mem := range l.members {
		if mem.id == id {
			return mem
		}
	}
	return nil
}

// ids returns the ids of l's members, in the order they joined.
func (l *lobby) ids() []string {
	ids := make([]string, len(l.members))
	for i, mem := range l.members {
		ids[i] = mem.id
	}
	return ids
}

// present returns the ids of l's members connected here, in the order
// they joined.
func (l *lobby) present() []string {
	var ids []string
	for _, mem := range l.members {
		if mem.present {
			ids = append(ids, mem.id)
		}
	}
	return ids
}

// stateLocked is l's snapshot. m.mu must be held.
func (m *Module) stateLocked(l *lobby) StatePacket {
	return StatePacket{Type: TypeState, Code: l.code, Host: l.host, Members: l.ids(), Playing: l.room != "", Room: l.room, Node: m.kit.Self()}
}

// broadcast sends l's state to its members connected here. Two
// broadcasts of one lobby from different goroutines (two joins at once)
// send in turn, the later state last.
func (m *Module) broadcast(l *lobby) {
	l.sending.Lock()
	defer l.sending.Unlock()
	m.mu.Lock()
	if m.lobbies[l.code] != l {
		m.mu.Unlock()
		return
	}
	p := m.stateLocked(l)
	var to []string
	for _, mem := range l.members {
		if mem.present && !mem.moving {
			to = append(to, mem.id)
		}
	}
	m.mu.Unlock()
	for _, id := range to {
		m.kit.Env.Send(id, p)
	}
}
