package matchmaking

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/muster-gg/muster/internal/modkit"
	"github.com/muster-gg/muster/room"
)

// Module is the matchmaking module of a room host: players enqueue on
// playlists, wait on the server where the fleet gathers each playlist,
// and are matched into rooms. Create it with New, add it with
// room.Host.Use, and the host's Run runs Run. It is safe for
// concurrent use.
type Module struct {
	kit       modkit.Base // the host it is attached to
	cfg       Config
	playlists []Playlist
	kick      chan struct{} // asks Run for a round now: a player enqueued or arrived

	mu         sync.Mutex
	queues     map[string]*queue
	order      []*queue // in declaration order
	players    map[string]*entry
	noRedirect bool // the game sends no redirect packet: every decision is local
	failing    bool // hand-overs are failing (logged once per streak)
}

// New returns a matchmaking module for playlists. It checks cfg and the
// playlists and starts nothing.
func New(cfg Config, playlists ...Playlist) (*Module, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(playlists) == 0 {
		return nil, fmt.Errorf("%w: New: no playlist", ErrConfig)
	}
	m := &Module{
		kit:     modkit.NewBase("matchmaking", ErrNotAttached),
		cfg:     cfg,
		kick:    make(chan struct{}, 1),
		queues:  make(map[string]*queue, len(playlists)),
		players: make(map[string]*entry),
	}
	for _, pl := range playlists {
		pl, err := pl.withDefaults()
		if err != nil {
			return nil, err
		}
		if m.queues[pl.Name] != nil {
			return nil, fmt.Errorf("%w: playlist %s declared twice", ErrConfig, pl.Name)
		}
		q := newQueue(pl)
		m.queues[pl.Name] = q
		m.order = append(m.order, q)
		m.playlists = append(m.playlists, pl)
	}
	if cfg.Ratings != nil && !slices.ContainsFunc(m.playlists, func(pl Playlist) bool { return pl.Rating.enabled() }) {
		return nil, fmt.Errorf("%w: Config.Ratings is set, but no playlist has a rating rule to use its ratings (Playlist.Rating; rating: in muster.matchmaking.playlists)", ErrConfig)
	}
	return m, nil
}

// Playlists returns the playlists, defaults filled in.
func (m *Module) Playlists() []Playlist {
	return append([]Playlist(nil), m.playlists...)
}

// Attach implements room.Module. Host.Use calls it.
func (m *Module) Attach(h room.ModuleHost) error { return m.kit.Attach(h) }

// Run forms matches and moves players to where their playlist gathers,
// every Config.Tick, until ctx ends. The host's Run runs it; it returns
// nil when ctx ends.
func (m *Module) Run(ctx context.Context) error {
	// A round at once when a player enqueues or arrives, but no more than
	// ten rounds a tick.
	return m.kit.Loop(ctx, m.cfg.Tick, m.cfg.Tick/10, m.kick, m.step)
}

// kickRun asks Run for a round without waiting for the tick.
func (m *Module) kickRun() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Drain implements fleet.Drainer: every waiting player, and every newcomer
// who enqueues meanwhile, is handed with its waited time to the server
// where its playlist now gathers. With nowhere to go, waiting players are
// told (the game's ServerDraining packet) and wait on; they are still
// moved if a server with room appears before ctx ends. Drain returns when
// nobody waits here any more, or when ctx ends. A player who queues after
// that is handed on by Run's next round, or by Release at the drain's end.
func (m *Module) Drain(ctx context.Context) error {
	return m.kit.Drain(ctx, m.cfg.Tick, m.step, m.tellRest)
}

// Waiting returns the number of players waiting in playlist's queue here.
func (m *Module) Waiting(playlist string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q := m.queues[playlist]; q != nil {
		return len(q.waiting)
	}
	return 0
}

// Waited returns how long player id has waited, and whether it waits
// here.
func (m *Module) Waited(id string) (time.Duration, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.players[id]
	if e == nil {
		return 0, false
	}
	return e.waited(time.Now()), true
}

// forget drops e from the players, unless a newer entry replaced it.
// m.mu must be held.
func (m *Module) forget(e *entry) {
	if m.players[e.id] == e {
		delete(m.players, e.id)
	}
}
