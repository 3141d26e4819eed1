package room

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/uid"
)

// Host runs rooms in memory for one game: it steps them at the fixed rate
// on its workers, serves the WebSocket transport, and binds modules
// (matchmaking, lobbies, the game's own), the server (capacity, drain) and
// the fleet (claims, rejoin from anywhere, handoffs).
//
// Create it with New, bind with Use, UseServer and UseFleet before Run,
// and serve Handler. Run owns every goroutine the Host starts, including
// the connections; it returns when they have all ended. A Host is safe for
// concurrent use.
type Host[Sim, Input, Player any] struct {
	cfg     Config
	game    Game[Sim, Input, Player]
	codec   Codec
	logger  *slog.Logger
	sched   *scheduler
	tickets *Tickets
	limits  *limiter

	// The game's optional hooks, found once.
	gameHooks[Sim, Input, Player]

	server   Server
	fleet    Fleet
	modules  []Module
	routes   map[string]MessageHandler
	checkers []TicketChecker
	watchers []RoomWatcher

	redirects sync.Map // reason → *atomic.Uint64
	handoffs  atomic.Uint64
	limited   atomic.Uint64 // connections closed for sending too fast

	// Rooms that move (migrate.go): the key that signs their snapshots,
	// how a snapshot reaches another server, and the counts.
	moveKey   []byte
	sendRoom  func(ctx context.Context, to fleet.Node, sealed []byte) error
	moveConns *http.Transport // sendRoom's, closed when Run returns
	moves     moveStats

	// Checkpoints against a crash (checkpoint.go, resume.go).
	ck      checkpointer
	ckStats checkpointStats

	mu      sync.Mutex
	running bool
	stopped bool
	rooms   map[string]*Room[Sim, Input, Player]
	seated  map[string]*Room[Sim, Input, Player] // player id → room
	clients map[string]*Client                   // player id → connection
	hellos  map[*Client]struct{}                 // connections still in hello
	conns   sync.WaitGroup                       // connection handlers
	sockets *sockets                             // the event loop; nil on the portable path
	recv    func(lc *loopConn, c *Client, frame []byte) bool
	roomEnd chan struct{} // signalled when a room ends
	started chan struct{} // closed when Run begins
	nextID  uint64
	idTag   string // this host's mark in the room ids it makes (uid.Tag)

	// The room ends that players away at the time did not hear of, told
	// when they come back (awayend.go).
	missed      map[string]missedEnd // player id → its room's end
	missedSweep int                  // sweep expired entries at this size

	// The claims to release of players whose seats the step workers gave
	// up: Run's goroutine hands them to the fleet. A worker only appends
	// here, so it never waits on the Fleet, whatever implements it, and a
	// claim for a new seat cancels a queued release of the same player.
	relMu    sync.Mutex
	relQ     []string      // player ids queued
	relSpare []string      // the queue's other buffer
	relKick  chan struct{} // signalled when relQ is appended to
	claimMu  sync.Mutex    // held over a hand-over; a claim waits for it

	// handling is held (for reading) while a module handles a client's
	// message; the drain's last part takes it to end that (lastPart), so
	// that no module takes on a player it is sending away (drainlast.go).
	handling sync.RWMutex
	lastPart bool
}

// New returns a Host for game with cfg. It starts nothing. It refuses a
// cfg out of range (ErrConfig), a game with a method named like an
// optional hook whose signature does not match the hook's (ErrHook), and
// a Sim that is a plain value, whose changes would be lost (ErrSimKind).
func New[Sim, Input, Player any](game Game[Sim, Input, Player], cfg Config, logger *slog.Logger) (*Host[Sim, Input, Player], error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkSim[Sim](); err != nil {
		return nil, err
	}
	hooks, err := findHooks(game)
	if err != nil {
		return nil, err
	}
	if cfg.Checkpoint.Interval > 0 && hooks.migrator == nil {
		return nil, configError("checkpoint.interval", "%s, but the game does not implement room.Migrator: its rooms cannot be snapshotted; set 0",
			cfg.Checkpoint.Interval)
	}
	if logger == nil {
		logger = slog.Default()
	}
	h := &Host[Sim, Input, Player]{
		cfg:       cfg,
		game:      game,
		gameHooks: hooks,
		codec:     JSON{},
		logger:    logger.With("component", "room"),
		sched:     newScheduler(time.Second/time.Duration(cfg.Rate), cfg.Workers),
		routes:    make(map[string]MessageHandler),
		rooms:     make(map[string]*Room[Sim, Input, Player]),
		seated:    make(map[string]*Room[Sim, Input, Player]),
		clients:   make(map[string]*Client),
		hellos:    make(map[*Client]struct{}),
		roomEnd:   make(chan struct{}, 1),
		sockets:   newSockets(cfg),
		started:   make(chan struct{}),
		relKick:   make(chan struct{}, 1),
		idTag:     uid.Tag(),
	}
	local := memory.New() // counters until a fleet is bound
	h.moveKey = snapshotKey(cfg.Secret)
	h.moveConns = &http.Transport{Proxy: nil, MaxIdleConnsPerHost: moveParallel, IdleConnTimeout: time.Minute}
	h.sendRoom = httpSendRoom(&http.Client{Transport: h.moveConns, Timeout: cfg.Migrate.Timeout})
	h.tickets = newTickets(cfg.Secret, cfg.TicketTTL, local)
	h.limits = &limiter{cfg: cfg.Limits, counter: local}
	h.recv = h.loopReceiver()
	return h, nil
}

// SetCodec replaces the JSON codec. Call it before Run.
func (h *Host[Sim, Input, Player]) SetCodec(c Codec) { h.codec = c }

// Config returns the configuration in force, defaults filled in.
func (h *Host[Sim, Input, Player]) Config() Config { return h.cfg }

// Logger returns the host's logger, for modules.
func (h *Host[Sim, Input, Player]) Logger() *slog.Logger { return h.logger }

// Tickets returns the host's ticket minter.
func (h *Host[Sim, Input, Player]) Tickets() *Tickets { return h.tickets }

// Codec returns the codec in use.
func (h *Host[Sim, Input, Player]) Codec() Codec { return h.codec }

// Game returns the game.
func (h *Host[Sim, Input, Player]) Game() Game[Sim, Input, Player] { return h.game }

// Started returns a channel closed once Run has begun: from then on the
// host takes connections and opens rooms (before, /play answers 503).
func (h *Host[Sim, Input, Player]) Started() <-chan struct{} { return h.started }

// Run steps the rooms until ctx ends, then closes every connection and
// returns when all the host's goroutines have ended.
//
// Once ctx ends the host is stopping: it refuses new connections and
// hellos (1001), closes the connections still in hello at once, opens no
// room, ends the rooms (ReasonStopped; their claims are queued for the
// fleet to release, with no backplane call here) and closes the players'
// connections. It returns within a bounded time whatever the clients do.
func (h *Host[Sim, Input, Player]) Run(ctx context.Context) error {
	if err := h.begin(); err != nil {
		return err
	}
	h.warnNoRedirect()
	stopHelpers := h.startHelpers(ctx)
	h.sched.run(ctx)

	h.beginStop()
	stopHelpers()
	h.stopCheckpoints(context.WithoutCancel(ctx))
	h.endRooms()
	h.closeClients()
	h.conns.Wait()
	h.sockets.stop()
	h.moveConns.CloseIdleConnections()
	return nil
}

// begin marks the host running, once: from then on it takes connections.
func (h *Host[Sim, Input, Player]) begin() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.running || h.stopped {
		return errors.New("room: Run called twice")
	}
	h.running = true
	close(h.started)
	return nil
}

// warnNoRedirect warns when a fleet is bound to a game whose Redirect
// returns nil: nobody will be moved.
func (h *Host[Sim, Input, Player]) warnNoRedirect() {
	if rd, ok := h.game.(Redirector); ok && h.fleet != nil && rd.Redirect(Redirect{NodeID: "probe", Reason: ReasonRejoin}) == nil {
		h.logger.Warn("the game's Redirect returns nil: the fleet moves no player (to its room's server, a match, or off a draining server)")
	}
}

// startHelpers starts the host's goroutines beside the step workers: the
// load reports, the hand-over of releases to the fleet, and the modules'
// Run. The function it returns stops them and waits for them to return.
func (h *Host[Sim, Input, Player]) startHelpers(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { h.reportLoad(ctx) })
	if h.fleet != nil {
		wg.Go(func() { h.handReleases(ctx) })
	}
	if cs := h.checkpointStore(); cs != nil {
		wg.Go(func() { h.writeCheckpoints(ctx, cs) })
		wg.Go(func() { h.watchDead(ctx, cs) })
	} else if h.cfg.Checkpoint.Interval > 0 {
		h.logger.Warn("muster.room.checkpoint.interval is set but no fleet that keeps checkpoints is bound: no checkpoint is written")
	}
	for _, m := range h.modules {
		if r, ok := m.(Runner); ok {
			wg.Go(func() {
				if err := r.Run(ctx); err != nil && ctx.Err() == nil {
					h.logger.Error("module stopped", "module", fmt.Sprintf("%T", m), "err", err)
				}
			})
		}
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// beginStop begins the stop: no new connection, hello or room from here
// on, and the connections still in hello are closed.
func (h *Host[Sim, Input, Player]) beginStop() {
	h.mu.Lock()
	h.stopped = true
	hellos := slices.Collect(maps.Keys(h.hellos))
	h.mu.Unlock()
	for _, c := range hellos {
		c.Close(StatusGoingAway, "server stopping")
	}
}

// endRooms ends the rooms still running once nothing steps them, so that
// nobody waits for them (a drain) and their players are released: the
// releases are handed to the fleet at once.
func (h *Host[Sim, Input, Player]) endRooms() {
	for _, r := range h.runningRooms() {
		r.finish(ReasonStopped)
	}
	h.handOverReleases()
}

// closeClients closes every player's connection.
func (h *Host[Sim, Input, Player]) closeClients() {
	h.mu.Lock()
	clients := make([]*Client, 0, len(h.clients))
	for _, c := range h.clients {
		clients = append(clients, c)
	}
	h.mu.Unlock()
	for _, c := range clients {
		c.Close(StatusGoingAway, "server stopping")
	}
}

// runningRooms returns the rooms that have not ended.
func (h *Host[Sim, Input, Player]) runningRooms() []*Room[Sim, Input, Player] {
	h.mu.Lock()
	defer h.mu.Unlock()
	rooms := make([]*Room[Sim, Input, Player], 0, len(h.rooms))
	for _, r := range h.rooms {
		rooms = append(rooms, r)
	}
	return rooms
}

// encode encodes p with the host's codec.
func (h *Host[Sim, Input, Player]) encode(p Packet) ([]byte, error) { return h.codec.Encode(p) }
