package room

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/uid"
)

// ReasonPanic is the end reason of a room whose game code panicked.
const ReasonPanic = "panic"

// ReasonStopped is the end reason of the rooms still running when the
// host's Run returns.
const ReasonStopped = "server-stopped"

// ReasonAbandoned is the end reason of a room whose players were all away
// for the AwayTimeout, or all left (each sent "leave", or was unseated or
// refused its seat).
const ReasonAbandoned = "abandoned"

// ReasonDrained is the end reason of a room closed at the drain timeout.
const ReasonDrained = "server-drained"

// Server is what UseServer binds: capacity and drain. *fleet.Fleet
// implements it.
type Server interface {
	SetLoad(load int)
	SetStat(name string, value int64)
	Draining() bool
	AddDrainer(d fleet.Drainer)
}

// Fleet is what UseFleet binds: player claims, rejoin from anywhere and
// handoffs. *fleet.Fleet implements it.
type Fleet interface {
	ID() string
	Config() fleet.Config
	Alone() bool
	Nodes() []fleet.Node
	Claim(ctx context.Context, kind string, ids ...string) error
	Release(ctx context.Context, kind string, ids ...string) error
	// ReleaseLater releases claims without I/O on the caller: the fleet
	// writes them, batched, from its own goroutine. Modules use it on
	// step workers; the host calls it from its own goroutine, for the
	// seats its workers gave up.
	ReleaseLater(kind string, ids ...string)
	// Holds reports whether this server holds the claim on kind/id.
	Holds(kind, id string) bool
	// OnClaimLost sets the function told of claims another server took
	// over at re-assertion.
	OnClaimLost(fn func(kind, id string))
	Locate(ctx context.Context, kind, id string) (fleet.Node, error)
	Arrive(ctx context.Context, kind, id string) (holder fleet.Node, handoff []byte, err error)
	PutHandoff(ctx context.Context, target, id string, data []byte) error
	Increment(ctx context.Context, key string, ttl time.Duration, by int64) (int64, error)
}

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
	before BeforeStepper[Sim, Input, Player]
	after  AfterStepper[Sim, Input, Player]
	loader Loader[Sim]
	ender  RoomEnder[Sim, Input, Player]
	admit  Admitter[Sim, Input, Player]

	server   Server
	fleet    Fleet
	modules  []Module
	routes   map[string]MessageHandler
	checkers []TicketChecker
	watchers []RoomWatcher

	redirects sync.Map // reason → *atomic.Uint64
	handoffs  atomic.Uint64
	limited   atomic.Uint64 // connections closed for sending too fast

	mu      sync.Mutex
	running bool
	stopped bool
	rooms   map[string]*Room[Sim, Input, Player]
	seated  map[string]*Room[Sim, Input, Player] // player id → room
	clients map[string]*Client                   // player id → connection
	hellos  map[*Client]struct{}                 // connections still in hello
	conns   sync.WaitGroup                       // connection handlers
	roomEnd chan struct{}                        // signalled when a room ends
	started chan struct{}                        // closed when Run begins
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

// New returns a Host for game with cfg. It starts nothing.
func New[Sim, Input, Player any](game Game[Sim, Input, Player], cfg Config, logger *slog.Logger) (*Host[Sim, Input, Player], error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	h := &Host[Sim, Input, Player]{
		cfg:     cfg,
		game:    game,
		codec:   JSON{},
		logger:  logger.With("component", "room"),
		sched:   newScheduler(time.Second/time.Duration(cfg.Rate), cfg.Workers),
		routes:  make(map[string]MessageHandler),
		rooms:   make(map[string]*Room[Sim, Input, Player]),
		seated:  make(map[string]*Room[Sim, Input, Player]),
		clients: make(map[string]*Client),
		hellos:  make(map[*Client]struct{}),
		roomEnd: make(chan struct{}, 1),
		started: make(chan struct{}),
		relKick: make(chan struct{}, 1),
		idTag:   uid.Tag(),
	}
	h.before, _ = game.(BeforeStepper[Sim, Input, Player])
	h.after, _ = game.(AfterStepper[Sim, Input, Player])
	h.loader, _ = game.(Loader[Sim])
	h.ender, _ = game.(RoomEnder[Sim, Input, Player])
	h.admit, _ = game.(Admitter[Sim, Input, Player])
	local := memory.New() // counters until a fleet is bound
	h.tickets = newTickets(cfg.Secret, cfg.TicketTTL, local)
	h.limits = &limiter{cfg: cfg.Limits, counter: local}
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

// Use adds a module. Its message types must not clash with another's.
// Call Use before Run.
func (h *Host[Sim, Input, Player]) Use(m Module) error {
	if mh, ok := m.(MessageHandler); ok {
		for _, typ := range mh.MessageTypes() {
			if typ == msgHello || typ == msgInput || h.routes[typ] != nil {
				return fmt.Errorf("room: Use: message type %q is taken", typ)
			}
			h.routes[typ] = mh
		}
	}
	if err := m.Attach(h); err != nil {
		return fmt.Errorf("room: Use: %w", err)
	}
	h.modules = append(h.modules, m)
	if w, ok := m.(RoomWatcher); ok {
		h.watchers = append(h.watchers, w)
	}
	if h.server != nil {
		if d, ok := m.(fleet.Drainer); ok {
			h.server.AddDrainer(d)
		}
	}
	return nil
}

// UseServer binds capacity and drain: the host reports its load, opens no
// room while draining, lets running rooms finish (rejoins still work), and
// at the drain timeout tells their players (the game's ServerDraining) and
// closes them after the grace; last, once every part of the drain is done,
// it sends the players still connected in no room to another server (with
// a fleet bound). Modules that drain are added to s too.
func (h *Host[Sim, Input, Player]) UseServer(s Server) {
	h.server = s
	s.AddDrainer(hostDrainer[Sim, Input, Player]{h})
	for _, m := range h.modules {
		if d, ok := m.(fleet.Drainer); ok {
			s.AddDrainer(d)
		}
	}
}

// UseFleet binds the fleet: players seated here are claimed, a player who
// connects to the wrong server is sent to the one running its room,
// handoffs are taken on arrival, and tickets, rate limits and lockouts
// are counted once for the whole fleet.
//
// A player whose claim another server took over (the fleet found it at
// re-assertion, after this server was cut off or frozen) is removed from
// its room here as if it had left, and told so (room_end, reason "left").
func (h *Host[Sim, Input, Player]) UseFleet(f Fleet) {
	h.fleet = f
	f.OnClaimLost(func(kind, id string) {
		if kind == fleet.KindPlayer {
			h.claimLost(id)
		}
	})
	h.tickets.counter = f
	if h.cfg.Limits.Store == StoreBackplane {
		h.limits.counter = f
	}
}

// Fleet returns the bound fleet, or nil.
func (h *Host[Sim, Input, Player]) Fleet() Fleet { return h.fleet }

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
	h.mu.Lock()
	if h.running || h.stopped {
		h.mu.Unlock()
		return errors.New("room: Run called twice")
	}
	h.running = true
	close(h.started)
	h.mu.Unlock()
	if rd, ok := h.game.(Redirector); ok && h.fleet != nil && rd.Redirect(Redirect{NodeID: "probe", Reason: ReasonRejoin}) == nil {
		h.logger.Warn("the game's Redirect returns nil: the fleet moves no player (to its room's server, a match, or off a draining server)")
	}

	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { h.reportLoad(loadCtx) })
	if h.fleet != nil {
		wg.Go(func() { h.handReleases(loadCtx) })
	}
	for _, m := range h.modules {
		if r, ok := m.(Runner); ok {
			wg.Go(func() {
				if err := r.Run(loadCtx); err != nil && loadCtx.Err() == nil {
					h.logger.Error("module stopped", "module", fmt.Sprintf("%T", m), "err", err)
				}
			})
		}
	}
	h.sched.run(ctx)

	// Stopping: no new connection, hello or room from here on.
	h.mu.Lock()
	h.stopped = true
	hellos := slices.Collect(maps.Keys(h.hellos))
	h.mu.Unlock()
	for _, c := range hellos {
		c.Close(StatusGoingAway, "server stopping")
	}
	stopLoad()
	wg.Wait()
	// Nothing steps the rooms any more: end them, so that nobody waits
	// for them (a drain) and their players are released.
	for _, r := range h.runningRooms() {
		r.finish(ReasonStopped)
	}
	h.handOverReleases()

	h.mu.Lock()
	clients := make([]*Client, 0, len(h.clients))
	for _, c := range h.clients {
		clients = append(clients, c)
	}
	h.mu.Unlock()
	for _, c := range clients {
		c.Close(StatusGoingAway, "server stopping")
	}
	h.conns.Wait()
	return nil
}

// reportLoad publishes the load, and the "rooms" and "players" stats, to
// the server every second.
func (h *Host[Sim, Input, Player]) reportLoad(ctx context.Context) {
	if h.server == nil {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		st := h.Stats()
		h.server.SetLoad(st.Load)
		h.server.SetStat("rooms", int64(st.Rooms))
		h.server.SetStat("players", int64(st.Connected))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Load returns the sum of the rooms' loads (the game's LoadOf, or the
// seated players).
func (h *Host[Sim, Input, Player]) Load() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	total := 0
	for _, r := range h.rooms {
		total += int(r.load.Load())
	}
	return total
}

// Stats is a snapshot of a Host's counters, for metrics.
type Stats struct {
	// Rooms is the number of running rooms.
	Rooms int
	// Seated is the number of players with a seat, present or away.
	Seated int
	// Connected is the number of players connected to this host.
	Connected int
	// Load is the sum of the rooms' loads.
	Load int
	// Redirects counts the clients sent to another server, by reason.
	Redirects map[string]uint64
	// Handoffs counts the handoffs written for players moved away.
	Handoffs uint64
	// Limited counts the connections closed (StatusLimited) for sending
	// more messages than Limits.Messages and Limits.Burst allow.
	Limited uint64
}

// Stats returns the host's counters.
func (h *Host[Sim, Input, Player]) Stats() Stats {
	st := Stats{Load: h.Load(), Redirects: map[string]uint64{}, Handoffs: h.handoffs.Load(), Limited: h.limited.Load()}
	h.mu.Lock()
	st.Rooms, st.Seated, st.Connected = len(h.rooms), len(h.seated), len(h.clients)
	h.mu.Unlock()
	h.redirects.Range(func(k, v any) bool {
		st.Redirects[k.(string)] = v.(*atomic.Uint64).Load()
		return true
	})
	return st
}

// Rooms returns the number of running rooms.
func (h *Host[Sim, Input, Player]) Rooms() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.rooms)
}

// Lateness returns the quantile q (0.99 for p99) of how late room steps
// started after they were due, and the number of steps measured. Steps
// owed while a room waited (a worker stalled, a pass that ran long) and
// steps dropped by MaxCatchUp count, each as late as it was; the
// histogram reaches about 2 s.
func (h *Host[Sim, Input, Player]) Lateness(q float64) (time.Duration, uint64) {
	return h.sched.lateness(q)
}

// ResetLateness forgets the lateness measured so far, e.g. after warm-up.
func (h *Host[Sim, Input, Player]) ResetLateness() { h.sched.resetLateness() }

// OpenRoom opens a room and seats info.Players in it (their Join runs
// before the room's first step). Players connected to this host are
// attached to their seats; the others take them when they arrive. With a
// fleet bound, every seated player is claimed. It fails while the server
// drains, for a player already seated, and for an info.ID already open
// here. An empty info.ID is given one unique across the fleet and over
// restarts (r<n>-<random>).
func (h *Host[Sim, Input, Player]) OpenRoom(ctx context.Context, info Info) (*Room[Sim, Input, Player], error) {
	if h.server != nil && h.server.Draining() {
		return nil, ErrDraining
	}
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	for _, id := range info.Players {
		if h.seated[id] != nil {
			h.mu.Unlock()
			return nil, fmt.Errorf("open room: %w: %s", ErrSeated, id)
		}
	}
	h.nextID++
	if info.ID == "" {
		info.ID = fmt.Sprintf("r%d-%s", h.nextID, h.idTag)
	} else if h.rooms[info.ID] != nil {
		h.mu.Unlock()
		return nil, fmt.Errorf("open room: id %q is taken", info.ID)
	}
	r := &Room[Sim, Input, Player]{
		host:  h,
		info:  info,
		sim:   h.game.NewSim(info),
		seats: make(map[string]*seat[Player], len(info.Players)),
	}
	h.rooms[info.ID] = r
	for _, id := range info.Players {
		r.seats[id] = &seat[Player]{client: h.clients[id]}
		r.inbox = append(r.inbox, event[Input]{kind: evJoin, id: id})
		h.seated[id] = r
		if c := h.clients[id]; c != nil {
			c.setRoom(info.ID)
		}
	}
	r.dirty.Store(len(r.inbox) > 0)
	r.seatsChanged()
	if h.loader != nil {
		// Until its first pass asks the game, a new room counts its
		// seats: the host's load includes it at once, so that a module
		// filling the server to its max-load does not overshoot.
		r.load.Store(int64(len(info.Players)))
	}
	h.mu.Unlock()
	h.roomChanged(r, false, nil)
	h.sched.add(r)
	h.claimPlayers(ctx, info.Players)
	for _, id := range info.Players {
		h.Send(id, roomPacket{Type: "room", Room: info.ID, Kind: info.Kind})
	}
	return r, nil
}

// Seat adds player id to a running room (a late joiner). It fails with
// ErrClosed once the room has ended or is ending (End was called, or its
// last player left).
func (h *Host[Sim, Input, Player]) Seat(ctx context.Context, roomID, id string) error {
	h.mu.Lock()
	r := h.rooms[roomID]
	switch {
	case r == nil:
		h.mu.Unlock()
		return fmt.Errorf("seat %s: room %s: %w", id, roomID, ErrClosed)
	case h.seated[id] != nil:
		h.mu.Unlock()
		return fmt.Errorf("seat: %w: %s", ErrSeated, id)
	}
	c := h.clients[id]
	r.mu.Lock()
	if r.ended || r.endAsked != "" {
		// Ended, or ending after the pass under way (the game's End, or
		// the last player left): a seat now would be dropped with it.
		r.mu.Unlock()
		h.mu.Unlock()
		return fmt.Errorf("seat %s: room %s: %w", id, roomID, ErrClosed)
	}
	r.seats[id] = &seat[Player]{client: c}
	r.inbox = append(r.inbox, event[Input]{kind: evJoin, id: id})
	r.dirty.Store(true)
	r.seatsChanged()
	r.mu.Unlock()
	h.seated[id] = r
	if c != nil {
		c.setRoom(roomID)
	}
	h.mu.Unlock()
	h.roomChanged(r, false, nil)
	h.claimPlayers(ctx, []string{id})
	h.Send(id, roomPacket{Type: "room", Room: roomID, Kind: r.info.Kind})
	return nil
}

// Unseat removes player id from its room for good: the game's Leave runs
// before the next step, and then the player, if connected, is told
// (room_end, reason "left"). A room whose last seated player is removed
// ends (ReasonAbandoned). A player's "leave" packet calls it.
func (h *Host[Sim, Input, Player]) Unseat(id string) {
	h.mu.Lock()
	r := h.seated[id]
	h.mu.Unlock()
	if r != nil {
		r.push(event[Input]{kind: evLeave, id: id})
	}
}

// ReasonLeft is the room_end reason sent to a player removed from its room
// for good: it sent "leave", Unseat was called, or another server now
// holds its claim.
const ReasonLeft = "left"

// claimLost removes player id, whose claim another server took over, from
// its room as if it had left; its connection here is told when the leave
// is applied, before the room's next step. It does not block: it runs on
// the fleet's goroutine, and in hellos.
func (h *Host[Sim, Input, Player]) claimLost(id string) { h.Unseat(id) }

// RoomOf returns the id of the room player id is seated in, or "".
func (h *Host[Sim, Input, Player]) RoomOf(id string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.seated[id]; r != nil {
		return r.info.ID
	}
	return ""
}

// Room returns the running room id.
func (h *Host[Sim, Input, Player]) Room(id string) (*Room[Sim, Input, Player], bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.rooms[id]
	return r, ok
}

// claimPlayers claims a room's players, in one round trip.
func (h *Host[Sim, Input, Player]) claimPlayers(ctx context.Context, ids []string) {
	if h.fleet == nil || len(ids) == 0 {
		return
	}
	// A player whose seat ended a moment ago may still have its release
	// queued: it must not reach the fleet after this claim, or the claim
	// is lost. So wait out a hand-over in progress, and drop the ids from
	// the queue.
	h.claimMu.Lock()
	h.relMu.Lock()
	h.relQ = slices.DeleteFunc(h.relQ, func(id string) bool { return slices.Contains(ids, id) })
	h.relMu.Unlock()
	h.claimMu.Unlock()
	if err := h.fleet.Claim(ctx, fleet.KindPlayer, ids...); err != nil {
		h.logger.Warn("claim players; re-asserted when the backplane returns", "players", len(ids), "err", err)
	}
}

// unseat forgets a player's seat after its Leave ran.
func (h *Host[Sim, Input, Player]) unseat(id, roomID string) {
	h.mu.Lock()
	if r := h.seated[id]; r != nil && r.info.ID == roomID {
		delete(h.seated, id)
	}
	// A player seated in another room by now keeps the claim.
	if h.seated[id] == nil {
		h.releaseLocked(id)
	}
	c := h.clients[id]
	h.mu.Unlock()
	h.kickReleases()
	if c != nil {
		c.leftRoom(roomID)
	}
}

// releaseLocked queues the release of player id's claim, for handReleases
// to pass to the fleet, which writes it from its own goroutine, batched.
// It runs on step workers, and with h.mu held, in the same hold as the
// seat is dropped: a claim for a new seat, which needs h.mu to seat the
// player first, then finds the release queued and cancels it.
func (h *Host[Sim, Input, Player]) releaseLocked(id string) {
	if h.fleet == nil {
		return
	}
	h.relMu.Lock()
	h.relQ = append(h.relQ, id)
	h.relMu.Unlock()
}

// kickReleases wakes handReleases.
func (h *Host[Sim, Input, Player]) kickReleases() {
	select {
	case h.relKick <- struct{}{}:
	default:
	}
}

// handReleases passes the queued releases to the fleet until ctx ends.
func (h *Host[Sim, Input, Player]) handReleases(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			h.handOverReleases()
			return
		case <-h.relKick:
			h.handOverReleases()
		}
	}
}

// handOverReleases passes the queued releases to the fleet.
func (h *Host[Sim, Input, Player]) handOverReleases() {
	h.claimMu.Lock()
	defer h.claimMu.Unlock()
	h.relMu.Lock()
	ids := h.relQ
	h.relQ = h.relSpare[:0]
	h.relMu.Unlock()
	if len(ids) > 0 {
		h.fleet.ReleaseLater(fleet.KindPlayer, ids...)
	}
	clear(ids)
	h.relMu.Lock()
	h.relSpare = ids[:0]
	h.relMu.Unlock()
}

// roomEnded forgets an ended room and its seats, and tells its players.
func (h *Host[Sim, Input, Player]) roomEnded(r *Room[Sim, Input, Player], seats map[string]*seat[Player], why string) {
	end := endPacket{Type: "room_end", Room: r.info.ID, Reason: why}
	now := time.Now()
	h.mu.Lock()
	delete(h.rooms, r.info.ID)
	var clients []*Client
	for id := range seats {
		if h.seated[id] == r {
			delete(h.seated, id)
		}
		// A player seated in another room by now keeps the claim.
		if h.seated[id] == nil {
			h.releaseLocked(id)
		}
		if c := h.clients[id]; c != nil {
			clients = append(clients, c)
		} else if h.seated[id] == nil {
			// Away (its connection dropped, or the server relaying it
			// stopped): told when it comes back.
			h.missLocked(id, end, now)
		}
	}
	h.mu.Unlock()
	h.kickReleases()
	players := slices.Collect(maps.Keys(seats))
	h.roomChanged(r, true, players)
	for _, c := range clients {
		c.setRoom("")
		c.Send(end)
	}
	for _, m := range h.modules {
		if e, ok := m.(RoomEndHandler); ok {
			e.RoomEnded(r.info, why)
		}
	}
	select {
	case h.roomEnd <- struct{}{}:
	default:
	}
}

// drain is the host's part of a server drain: wait for the rooms to end;
// at the timeout tell their players, wait the grace, and close them.
func (h *Host[Sim, Input, Player]) drain(ctx context.Context) error {
	if h.waitRooms(ctx) {
		return nil
	}
	if p := h.DrainPacket(); p != nil {
		for _, r := range h.runningRooms() {
			r.Broadcast(p)
		}
	}
	t := time.NewTimer(h.cfg.DrainGrace)
	defer t.Stop()
	<-t.C
	for _, r := range h.runningRooms() {
		r.End(ReasonDrained)
	}
	// The rooms end at their next pass; bound the wait by another grace.
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.DrainGrace)
	defer cancel()
	h.waitRooms(gctx)
	return nil
}

// waitRooms waits until no room runs (true) or ctx ends (false).
func (h *Host[Sim, Input, Player]) waitRooms(ctx context.Context) bool {
	for h.Rooms() > 0 {
		select {
		case <-h.roomEnd:
		case <-ctx.Done():
			return h.Rooms() == 0
		}
	}
	return true
}

func (h *Host[Sim, Input, Player]) runningRooms() []*Room[Sim, Input, Player] {
	h.mu.Lock()
	defer h.mu.Unlock()
	rooms := make([]*Room[Sim, Input, Player], 0, len(h.rooms))
	for _, r := range h.rooms {
		rooms = append(rooms, r)
	}
	return rooms
}

func (h *Host[Sim, Input, Player]) encode(p Packet) ([]byte, error) { return h.codec.Encode(p) }

// sendTo sends p to player id if it is connected here.
func (h *Host[Sim, Input, Player]) Send(id string, p Packet) {
	h.mu.Lock()
	c := h.clients[id]
	h.mu.Unlock()
	if c != nil {
		c.Send(p)
	}
}

// Connected reports whether player id is connected to this host.
func (h *Host[Sim, Input, Player]) Connected(id string) bool {
	_, ok := h.Client(id)
	return ok
}

// MovePlayer implements ModuleHost: Move for the connection of player id,
// or ErrGone.
func (h *Host[Sim, Input, Player]) MovePlayer(ctx context.Context, id string, to fleet.Node, reason string, ho *Handoff) error {
	c, ok := h.Client(id)
	if !ok {
		return ErrGone
	}
	return h.Move(ctx, c, to, reason, ho)
}

// Open implements ModuleHost: OpenRoom without the room.
func (h *Host[Sim, Input, Player]) Open(ctx context.Context, info Info) error {
	_, err := h.OpenRoom(ctx, info)
	return err
}

// FreeLoad implements ModuleHost.
func (h *Host[Sim, Input, Player]) FreeLoad() int {
	if h.fleet == nil {
		return math.MaxInt
	}
	limit := h.fleet.Config().MaxLoad
	if limit <= 0 {
		return math.MaxInt
	}
	return limit - h.Load()
}

// DrainPacket implements ModuleHost: the game's ServerDraining packet
// (nil when it returns nil: the game opted out), or without a
// DrainNotifier the default {type:"server_draining", reason}.
func (h *Host[Sim, Input, Player]) DrainPacket() Packet {
	if dn, ok := any(h.game).(DrainNotifier); ok {
		return dn.ServerDraining()
	}
	return DrainingPacket{Type: "server_draining", Reason: DrainReason}
}

// DrainReason is the reason of the default drain packet.
const DrainReason = "the server is shutting down: no new match starts here; a match that outlasts the drain timeout is ended"

// DrainingPacket is the default packet that tells a player the server
// drains, sent when the game has no DrainNotifier: to the players of the
// rooms still running at the drain timeout, shortly before those rooms are
// ended, and to waiting players with nowhere to go.
type DrainingPacket struct {
	Type   string `json:"type"` // "server_draining"
	Reason string `json:"reason"`
}

// Client returns the connection of player id on this host.
func (h *Host[Sim, Input, Player]) Client(id string) (*Client, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.clients[id]
	return c, ok
}

var _ ModuleHost = (*Host[struct{}, struct{}, struct{}])(nil)
