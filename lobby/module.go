package lobby

import (
	"context"
	"sync"

	"github.com/muster-gg/muster/backplane/memory"
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
