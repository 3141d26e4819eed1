package lobby

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/addrkey"
	"github.com/muster-gg/muster/internal/modkit"
	"github.com/muster-gg/muster/internal/uid"
	"github.com/muster-gg/muster/room"
)

// Module is the lobby module of a room host. Players create lobbies whose
// short codes work on every server of the fleet, friends join with the
// code, and the host of the lobby starts a match for its members. New
// creates it; room.Host.Use adds it, and the host's Run runs its Run.
// Module is safe for concurrent use.
type Module struct {
	cfg      Config
	kit      modkit.Base   // the host it is attached to
	gen      func() string // makes a candidate code
	attempts int           // candidate codes tried per creation

	mu       sync.Mutex
	lobbies  map[string]*lobby // code → lobby
	players  map[string]*lobby // member → lobby
	rooms    map[string]*lobby // running match room → lobby
	reserved map[string]bool   // codes being claimed
	waits    map[string]*wait  // moves waiting for the cooldown
	retrying map[string]bool   // waits taken out of waits by a step, being tried again
	local    room.Counter      // counts wrong codes without a fleet
	nextRoom uint64
	roomTag  string // this module's mark in its room ids (uid.Tag)
}

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
}

type member struct {
	id      string
	present bool      // connected here
	arrived time.Time // when it connected here (the move cooldown)
	expect  time.Time // moved here with its lobby, not arrived yet: dropped after
	moving  bool      // being handed to another server
	handed  bool      // handed to another server with its lobby
}

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

// New returns a lobby module. It checks cfg and starts nothing.
func New(cfg Config) (*Module, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Module{
		kit:      modkit.NewBase("lobby", ErrNotAttached),
		cfg:      cfg,
		gen:      func() string { return newCode(cfg.CodeLength) },
		attempts: 16,
		lobbies:  make(map[string]*lobby),
		players:  make(map[string]*lobby),
		rooms:    make(map[string]*lobby),
		reserved: make(map[string]bool),
		waits:    make(map[string]*wait),
		retrying: make(map[string]bool),
		local:    memory.New(),
		roomTag:  uid.Tag(),
	}, nil
}

// Attach implements room.Module. Host.Use calls it.
func (m *Module) Attach(h room.ModuleHost) error { return m.kit.Attach(h) }

// MessageTypes implements room.MessageHandler.
func (m *Module) MessageTypes() []string {
	return []string{MsgCreate, MsgJoin, MsgLeave, MsgStart}
}

// HandleMessage implements room.MessageHandler. A refused request is
// answered with an ErrorPacket; only an undecodable one closes the
// connection.
func (m *Module) HandleMessage(ctx context.Context, c *room.Client, typ string, body []byte) error {
	switch typ {
	case MsgCreate:
		m.create(ctx, c.ID(), c.CooldownFrom())
	case MsgJoin:
		var req struct {
			Code string `json:"code"`
		}
		if err := m.kit.Codec.Unmarshal(body, &req); err != nil {
			return fmt.Errorf("lobby.join: %w", err)
		}
		m.joinFrom(ctx, c.ID(), c.IP(), req.Code, c.CooldownFrom())
	case MsgLeave:
		m.leave(ctx, c.ID())
	case MsgStart:
		m.start(ctx, c.ID())
	}
	return nil
}

// Arrived implements room.ArrivalHandler: a player who brings a lobby
// handoff joins its lobby here, re-creating it under the same code when
// the whole lobby moved, or creates one.
func (m *Module) Arrived(ctx context.Context, c *room.Client, ho room.Handoff) {
	m.arrive(ctx, c.ID(), ho, c.CooldownFrom(), time.Now())
}

// Disconnected implements room.DisconnectHandler: a member whose
// connection ends leaves its lobby, unless the lobby's match is running
// (it may come back to its seat) or it is being moved.
func (m *Module) Disconnected(c *room.Client) {
	if m.kit.Env.Connected(c.ID()) {
		return // replaced by a newer connection
	}
	m.disconnected(c.ID())
}

func (m *Module) disconnected(id string) {
	m.mu.Lock()
	delete(m.waits, id)
	l := m.players[id]
	if l == nil {
		m.mu.Unlock()
		return
	}
	mem := l.member(id)
	switch {
	case mem.moving:
		m.mu.Unlock()
		return
	case l.room != "":
		mem.present = false
		m.mu.Unlock()
		m.broadcast(l)
		return
	}
	closed := m.removeLocked(l, id)
	m.mu.Unlock()
	m.closedOrChanged(context.Background(), l, closed)
}

// RoomEnded implements room.RoomEndHandler: a lobby whose match ended is
// open again; members who left during the match are dropped. On a
// draining server the lobby then moves. It runs on a step worker and does
// no I/O: a closed lobby's code is released by the fleet's own goroutine.
func (m *Module) RoomEnded(info room.Info, _ string) {
	m.mu.Lock()
	l := m.rooms[info.ID]
	delete(m.rooms, info.ID)
	if l == nil || l.room != info.ID {
		m.mu.Unlock()
		return
	}
	l.room = ""
	closed := false
	for _, mem := range slices.Clone(l.members) {
		if !mem.present && mem.expect.IsZero() {
			closed = m.removeLocked(l, mem.id)
		}
	}
	m.mu.Unlock()
	m.closedOrChanged(context.Background(), l, closed)
}

// Run does the module's housekeeping every Config.Tick until ctx ends:
// joins waiting for the move cooldown, members moved with a lobby who
// never arrived. The host's Run runs it; it returns nil when ctx ends.
func (m *Module) Run(ctx context.Context) error {
	return m.kit.Loop(ctx, m.cfg.Tick, 0, nil, m.step)
}

// Drain implements fleet.Drainer: every open lobby moves, with its code,
// its members and its host role, to another server; a lobby whose match
// is running moves when the match ends. With nowhere to go, the members
// are told (the game's ServerDraining packet). Drain returns when no
// lobby is left here, or when ctx ends.
func (m *Module) Drain(ctx context.Context) error {
	return m.kit.Drain(ctx, m.cfg.Tick, m.step, m.tellRest)
}

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
	ho, err := handoff{Role: RoleHost, Create: true, From: m.kit.Self()}.encode()
	if err != nil {
		return nil, false
	}
	return ho, false
}

// Lobby returns a snapshot of the lobby code on this server.
func (m *Module) Lobby(code string) (StatePacket, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.lobbies[code]
	if l == nil {
		return StatePacket{}, false
	}
	return m.stateLocked(l), true
}

// LobbyOf returns the code of player id's lobby on this server, or "".
func (m *Module) LobbyOf(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.players[id]; l != nil {
		return l.code
	}
	return ""
}

// Lobbies returns the number of lobbies on this server.
func (m *Module) Lobbies() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.lobbies)
}

func (m *Module) fail(id string, err error) {
	m.kit.Env.Send(id, ErrorPacket{Type: TypeError, Error: err.Error()})
}

// counter counts wrong codes: once for the fleet, or in memory.
func (m *Module) counter() room.Counter {
	if f := m.kit.Env.Fleet(); f != nil {
		return f
	}
	return m.local
}

// joinFrom is player id's join of the lobby code raw, asked from address
// ip, unless the address is locked out for wrong codes. The address counts
// by its addrkey, as room's limits count it: an IPv6 client by its /64.
//
// The join counts towards the address's lockout before the code is
// looked at, and is given back when the code was not wrong: however many
// joins one address has in flight at once, on however many servers, it
// tries at most Config.CodeFailures wrong codes per window. A counter
// that fails locks nobody out.
func (m *Module) joinFrom(ctx context.Context, id, ip, raw string, arrived time.Time) {
	if ip == "" {
		m.join(ctx, id, raw, arrived)
		return
	}
	key := "lobby-code-fail:" + addrkey.Of(ip)
	n, err := m.counter().Increment(ctx, key, m.cfg.CodeLockout, 1)
	if err != nil {
		m.kit.Logger.Debug("count a lobby join", "err", err)
		m.join(ctx, id, raw, arrived)
		return
	}
	if n > int64(m.cfg.CodeFailures) {
		m.giveBack(ctx, key)
		m.fail(id, ErrLocked)
		return
	}
	if !m.join(ctx, id, raw, arrived) {
		m.giveBack(ctx, key)
	}
}

// giveBack takes back a join counted under key that tried no wrong code.
func (m *Module) giveBack(ctx context.Context, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	n, err := m.counter().Increment(ctx, key, m.cfg.CodeLockout, -1)
	if err == nil && n < 0 {
		// The count's window ended while the join was in flight (or the
		// fleet began counting here): there was nothing to give back,
		// and a count below zero would be a free wrong code.
		_, err = m.counter().Increment(ctx, key, m.cfg.CodeLockout, 1)
	}
	if err != nil {
		m.kit.Logger.Debug("give back a lobby join", "err", err)
	}
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
	l := &lobby{code: code, host: id, members: []*member{{id: id, present: true, arrived: arrived}}}
	m.lobbies[code], m.players[id] = l, l
	m.mu.Unlock()
	m.broadcast(l)
}

// uniqueClaimer is the part of a fleet that claims an id for one server
// only; *fleet.Fleet has it.
type uniqueClaimer interface {
	ClaimUnique(ctx context.Context, kind, id string) error
}

// claim finds a free code and claims it, reserved locally until the
// caller drops the reservation.
func (m *Module) claim(ctx context.Context) (string, error) {
	f := m.kit.Env.Fleet()
	uc, _ := f.(uniqueClaimer)
	for range m.attempts {
		code := m.gen()
		m.mu.Lock()
		taken := m.lobbies[code] != nil || m.reserved[code]
		if !taken {
			m.reserved[code] = true
		}
		m.mu.Unlock()
		if taken {
			continue
		}
		if uc == nil {
			return code, nil // no fleet: unique on this server
		}
		err := uc.ClaimUnique(ctx, fleet.KindLobby, code)
		switch {
		case err == nil:
			return code, nil
		case errors.Is(err, fleet.ErrHeld):
			m.unreserve(code)
			continue
		case f.Alone():
			// Serving alone through a backplane outage: the claim is held
			// and re-asserted when the backplane returns.
			f.Claim(ctx, fleet.KindLobby, code)
			return code, nil
		default:
			m.unreserve(code)
			return "", fmt.Errorf("claim lobby code: %w", err)
		}
	}
	return "", fmt.Errorf("claim lobby code: %d codes taken", m.attempts)
}

func (m *Module) unreserve(code string) {
	m.mu.Lock()
	delete(m.reserved, code)
	m.mu.Unlock()
}

// release gives up the claim on a closed lobby's code. It may run on a
// step worker (RoomEnded), so it only queues the release: the fleet
// writes it from its own goroutine.
func (m *Module) release(_ context.Context, code string) {
	if f := m.kit.Env.Fleet(); f != nil {
		f.ReleaseLater(fleet.KindLobby, code)
	}
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
	f := m.kit.Env.Fleet()
	n, err := f.Locate(ctx, fleet.KindLobby, w.code)
	switch {
	case err == nil && n.ID == f.ID() && m.kit.Draining():
		// Not here (join looked) but still claimed here: handed to
		// another server and not landed yet. Asked again next step.
		m.mu.Lock()
		if m.players[w.id] == nil {
			m.waits[w.id] = w
		}
		m.mu.Unlock()
		return false
	case errors.Is(err, fleet.ErrNotFound), err == nil && n.ID == f.ID():
		m.fail(w.id, ErrNoLobby)
		return true
	case err != nil:
		m.kit.Logger.Warn("locate lobby", "player_id", w.id, "code", w.code, "err", err)
		m.fail(w.id, ErrUnavailable)
		return false
	case n.State == fleet.StateDraining || n.State == fleet.StateLeaving:
		m.mu.Lock()
		if m.players[w.id] == nil {
			m.waits[w.id] = w
		}
		m.mu.Unlock()
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
		m.mu.Lock()
		if m.players[w.id] == nil {
			m.waits[w.id] = w
		}
		m.mu.Unlock()
	default:
		m.kit.Logger.Warn("send a player to its lobby's server", "player_id", w.id, "code", w.code, "err", err)
		m.fail(w.id, ErrUnavailable)
	}
}

func (m *Module) move(ctx context.Context, id string, to fleet.Node, reason string, d handoff) error {
	ho, err := d.encode()
	if err != nil {
		return err
	}
	return m.kit.Env.MovePlayer(ctx, id, to, reason, ho)
}

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
	var ids []string
	for _, mem := range l.members {
		if mem.present {
			ids = append(ids, mem.id)
		}
	}
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

// arrive takes a lobby handoff.
func (m *Module) arrive(ctx context.Context, id string, ho room.Handoff, arrived, now time.Time) {
	if ho.Kind != HandoffKind {
		return
	}
	var d handoff
	if err := json.Unmarshal(ho.Data, &d); err != nil {
		m.kit.Logger.Warn("undecodable lobby handoff dropped", "player_id", id, "err", err)
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

	// The whole lobby moves here: the first member to arrive re-creates
	// it, with every member expected and the host it had.
	recreated := false
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
	m.mu.Unlock()
	if recreated {
		if f := m.kit.Env.Fleet(); f != nil {
			if err := f.Claim(ctx, fleet.KindLobby, d.Code); err != nil {
				m.kit.Logger.Warn("claim a lobby moved here; re-asserted when the backplane returns", "code", d.Code, "err", err)
			}
		}
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

func (l *lobby) member(id string) *member {
	for _, mem := range l.members {
		if mem.id == id {
			return mem
		}
	}
	return nil
}

// stateLocked is l's snapshot. m.mu must be held.
func (m *Module) stateLocked(l *lobby) StatePacket {
	p := StatePacket{Type: TypeState, Code: l.code, Host: l.host, Playing: l.room != "", Room: l.room, Node: m.kit.Self()}
	p.Members = make([]string, len(l.members))
	for i, mem := range l.members {
		p.Members[i] = mem.id
	}
	return p
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

// lobbyMove is a member to hand to another server with its lobby.
type lobbyMove struct {
	l   *lobby
	mem *member
	to  fleet.Node
	d   handoff
}

// step is one round of housekeeping at now: moves that waited for the
// cooldown, members who never arrived, and, while draining, lobbies handed
// to other servers. It returns the number of lobbies and waiting moves
// still here.
func (m *Module) step(ctx context.Context, now time.Time) int {
	self, nodes := m.kit.View()
	cool := m.kit.Env.Config().MoveCooldown
	cooled := func(arrived time.Time) bool { return !now.Before(arrived.Add(cool)) }

	m.mu.Lock()
	var (
		retry   []*wait
		changed []*lobby
		closed  []string
		moves   []lobbyMove
		tell    []string
	)
	for id, w := range m.waits {
		if cooled(w.arrived) {
			retry = append(retry, w)
			delete(m.waits, id)
			m.retrying[id] = true
		}
	}
	slices.SortFunc(retry, func(a, b *wait) int { // first come, first moved
		if c := a.arrived.Compare(b.arrived); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	codes := make([]string, 0, len(m.lobbies))
	for code := range m.lobbies {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	for _, code := range codes {
		l := m.lobbies[code]
		dropped, gone := false, false
		for _, mem := range slices.Clone(l.members) {
			if !mem.present && !mem.expect.IsZero() && now.After(mem.expect) {
				dropped = true
				gone = m.removeLocked(l, mem.id)
			}
		}
		switch {
		case gone:
			closed = append(closed, code)
			continue
		case dropped:
			changed = append(changed, l)
		}
		if !m.kit.Draining() || l.room != "" {
			continue // a running match's lobby moves when its room ends
		}
		present, handed := 0, false
		for _, mem := range l.members {
			present += btoi(mem.present)
			handed = handed || mem.handed
		}
		if present == 0 { // all handed over, or nobody here to move
			delete(m.lobbies, code)
			for _, mem := range l.members {
				if m.players[mem.id] == l {
					delete(m.players, mem.id)
				}
			}
			if !handed {
				closed = append(closed, code)
			}
			// A lobby handed over keeps its claim here until the first
			// member to arrive claims it on the target (or this server
			// leaves the fleet): a code typed meanwhile locates this
			// draining server, and the join waits for the lobby to land.
			continue
		}
		to, ok := drainTarget("lobby:"+code, nodes, self, l.target)
		if !ok {
			if !l.told {
				l.told = true
				for _, mem := range l.members {
					if mem.present {
						tell = append(tell, mem.id)
					}
				}
			}
			continue
		}
		l.target = to.ID
		ids := make([]string, len(l.members))
		for i, mem := range l.members {
			ids[i] = mem.id
		}
		for _, mem := range l.members {
			if mem.present && !mem.moving && cooled(mem.arrived) {
				role := RoleMember
				if mem.id == l.host {
					role = RoleHost
				}
				mem.moving = true
				moves = append(moves, lobbyMove{l: l, mem: mem, to: to, d: handoff{Code: code, Role: role, Host: l.host, Members: ids, From: self}})
			}
		}
	}
	draining := m.kit.Draining()
	m.mu.Unlock()

	for _, code := range closed {
		m.release(ctx, code)
	}
	for _, l := range changed {
		m.broadcast(l)
	}
	for _, w := range retry {
		m.retry(ctx, w, draining, nodes, self)
		m.mu.Lock()
		delete(m.retrying, w.id)
		m.mu.Unlock()
	}
	// The members move together: each move writes the member's handoff,
	// a backplane call that may wait for its deadline (Redis slow or
	// stalled), and one after another the last of k members would wait k
	// deadlines.
	var moving errgroup.Group
	moving.SetLimit(maxMoving)
	for _, mv := range moves {
		moving.Go(func() error {
			m.finishMove(mv, m.move(ctx, mv.mem.id, mv.to, room.ReasonDrain, mv.d))
			return nil
		})
	}
	_ = moving.Wait() // no Go function returns an error
	modkit.Tell(m.kit.Env, tell...)
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.lobbies) + len(m.waits)
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
		modkit.Tell(m.kit.Env, w.id)
		return
	}
	w.to = to
	m.moveWait(ctx, w)
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
		for _, mem := range l.members {
			if mem.present {
				tell = append(tell, mem.id)
			}
		}
	}
	m.mu.Unlock()
	modkit.Tell(m.kit.Env, tell...)
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

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
