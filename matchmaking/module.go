package matchmaking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/muster-gg/muster/fleet"
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

// MessageTypes implements room.MessageHandler.
func (m *Module) MessageTypes() []string { return []string{MsgQueue, MsgUnqueue} }

// HandleMessage implements room.MessageHandler. A refused request is
// answered with an ErrorPacket; only an undecodable one closes the
// connection.
func (m *Module) HandleMessage(ctx context.Context, c *room.Client, typ string, body []byte) error {
	switch typ {
	case MsgQueue:
		var req struct {
			Playlist string   `json:"playlist"`
			Rating   *float64 `json:"rating"`
		}
		if err := m.kit.Codec.Unmarshal(body, &req); err != nil {
			return fmt.Errorf("queue: %w", err)
		}
		rating := req.Rating
		// A seated player is refused by enqueue anyway: it costs the
		// game's records no look-up.
		if q := m.queues[req.Playlist]; q != nil && q.pl.Rating.enabled() && m.cfg.Ratings != nil && m.kit.Env.RoomOf(c.ID()) == "" {
			r, err := m.rate(ctx, c, req.Playlist)
			if err != nil {
				m.kit.Logger.Warn("Ratings failed; the player is not queued", "player_id", c.ID(), "playlist", req.Playlist, "err", err)
				m.kit.Env.Send(c.ID(), ErrorPacket{Type: TypeError, Error: ErrRating.Error()})
				return nil
			}
			rating = &r
		}
		m.enqueue(c.ID(), req.Playlist, rating, c.CooldownFrom(), time.Now())
	case MsgUnqueue:
		m.unqueue(c.ID())
	}
	return nil
}

// ratingsTimeout bounds a call of Config.Ratings; a variable for tests.
var ratingsTimeout = 5 * time.Second

// rate asks Config.Ratings for the rating of client c in playlist, with a
// context that ends after ratingsTimeout or when the server closes c's
// connection, whichever comes first: the call holds c's reads, so c's
// own end is noticed by its pings, not by its reads.
func (m *Module) rate(ctx context.Context, c *room.Client, playlist string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, ratingsTimeout)
	defer cancel()
	go func() {
		select {
		case <-c.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	r, err := m.cfg.Ratings(ctx, c.ID(), playlist)
	if err == nil && (math.IsNaN(r) || math.IsInf(r, 0)) {
		err = fmt.Errorf("rating %v is not finite", r)
	}
	return r, err
}

// Arrived implements room.ArrivalHandler: a player who brings a queue
// handoff waits on here, with the time it already waited.
func (m *Module) Arrived(_ context.Context, c *room.Client, ho room.Handoff) {
	m.arrive(c.ID(), ho, c.CooldownFrom(), time.Now())
}

// Disconnected implements room.DisconnectHandler: a player whose
// connection ends leaves the queue, unless it is being matched or moved,
// or has already connected again.
func (m *Module) Disconnected(c *room.Client) {
	if m.kit.Env.Connected(c.ID()) {
		return // replaced by a newer connection that keeps the place
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.players[c.ID()]; e != nil && e.state == waiting {
		e.q.remove(e)
		delete(m.players, e.id)
	}
}

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

// Release implements room.Releaser: at the end of a drain, a player who
// still waits here (it queued after the module's drain, within its move
// cooldown, or just before the drain's end) leaves the queue and takes its
// place along, with its waited time, as the drain's own hand-over does. A
// player being moved is the module's to move.
func (m *Module) Release(id string) (*room.Handoff, bool) {
	now := time.Now()
	m.mu.Lock()
	e := m.players[id]
	switch {
	case e == nil:
		m.mu.Unlock()
		return nil, false
	case e.state != waiting:
		m.mu.Unlock()
		return nil, true
	}
	d := e.handoff(now, m.kit.Self(), true)
	e.q.remove(e)
	delete(m.players, id)
	m.mu.Unlock()
	ho, err := d.encode()
	if err != nil {
		return nil, false
	}
	return ho, false
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

// enqueue puts player id in playlist's queue; a refusal is sent to it.
func (m *Module) enqueue(id, playlist string, rating *float64, arrived, now time.Time) {
	if err := m.tryEnqueue(id, playlist, rating, arrived, now); err != nil {
		m.kit.Env.Send(id, ErrorPacket{Type: TypeError, Error: err.Error()})
		return
	}
	m.kit.Env.Send(id, WaitingPacket{Type: TypeWaiting, Playlist: playlist, Node: m.kit.Self()})
	m.kickRun()
}

func (m *Module) tryEnqueue(id, playlist string, rating *float64, arrived, now time.Time) error {
	if m.kit.Env.RoomOf(id) != "" {
		return ErrSeated
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queues[playlist]
	if q == nil {
		return ErrUnknownPlaylist
	}
	if old := m.players[id]; old != nil {
		if old.state != waiting {
			return ErrMatched
		}
		old.q.remove(old)
		delete(m.players, id)
	}
	e := &entry{id: id, rating: q.pl.Rating.Default, since: now.UnixNano(), arrived: arrived}
	if rating != nil {
		e.rating = *rating
	}
	q.add(e)
	m.players[id] = e
	return nil
}

func (m *Module) unqueue(id string) {
	m.mu.Lock()
	e := m.players[id]
	var err error
	switch {
	case e == nil:
		m.mu.Unlock()
		return
	case e.state != waiting:
		err = ErrMatched
	default:
		e.q.remove(e)
		delete(m.players, id)
	}
	m.mu.Unlock()
	if err != nil {
		m.kit.Env.Send(id, ErrorPacket{Type: TypeError, Error: err.Error()})
		return
	}
	m.kit.Env.Send(id, LeftPacket{Type: TypeLeft, Playlist: e.q.pl.Name})
}

// arrive takes a queue handoff: the player waits on here, its start
// back-dated by the time it waited elsewhere, and this server gathers the
// playlist for a while, since another server thinks it should.
func (m *Module) arrive(id string, ho room.Handoff, arrived, now time.Time) {
	if ho.Kind != HandoffKind {
		return
	}
	var d handoff
	if err := json.Unmarshal(ho.Data, &d); err != nil {
		m.kit.Logger.Warn("undecodable queue handoff dropped", "player_id", id, "err", err)
		return
	}
	d.Waited = min(max(d.Waited, 0), int64(maxWaited)) // from another server: keep it sane
	hold, back := m.hold(), m.backGuard()
	m.mu.Lock()
	q := m.queues[d.Playlist]
	if q == nil {
		m.mu.Unlock()
		m.kit.Logger.Warn("queue handoff for a playlist this server does not have", "player_id", id, "playlist", d.Playlist)
		m.kit.Env.Send(id, ErrorPacket{Type: TypeError, Error: ErrUnknownPlaylist.Error()})
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
	self, nodes := m.kit.View()
	selfOpen := true // may open rooms: not draining or leaving
	var selfNode fleet.Node
	for _, n := range nodes {
		if n.ID == self {
			selfNode = n
			selfOpen = n.State != fleet.StateDraining && n.State != fleet.StateLeaving
		}
	}
	// seats is how many players this round may still seat here, from the
	// host's exact load: the published one lags (a second, then a
	// heartbeat), and one round can form many matches. A match counts as
	// its number of players, which is the load of its room unless the
	// game weighs rooms with its own LoadOf: then it is an approximation.
	// Rounds that form matches do not overlap (Run runs them one after
	// another; Drain's rounds match nobody), so the rooms of the earlier
	// rounds are all in the host's load.
	seats := max(m.kit.Env.FreeLoad(), 0)
	cool := m.kit.Env.Config().MoveCooldown
	movable := func(e *entry, draining bool) bool {
		if now.Before(e.arrived.Add(cool)) {
			return false // the host refuses it (F7); try again later
		}
		return draining || !now.Before(e.hold)
	}

	m.mu.Lock()
	local := f == nil || len(nodes) <= 1 || m.noRedirect
	// The server may be draining before its drainers are called.
	draining := m.kit.Draining() || selfNode.State == fleet.StateDraining || selfNode.State == fleet.StateLeaving
	var (
		matches []match
		moves   []plannedMove
		tell    []string
	)
	// gather forms the matches of q that fit in seats. Without room for
	// one more, the players still waiting overflow to the first server of
	// order, q's gather order, that is not this one and that they may be
	// sent to; with none, they wait.
	gather := func(q *queue, order []fleet.Node) {
		before := len(matches)
		matches = q.match(now, matches, seats)
		seats -= (len(matches) - before) * q.pl.size()
		if seats >= q.pl.size() {
			return
		}
		for _, e := range q.waiting {
			to := slices.IndexFunc(order, func(n fleet.Node) bool { return n.ID != self && !e.blocked(n.ID, now) })
			if to >= 0 && movable(e, false) {
				moves = append(moves, plannedMove{e: e, to: order[to], reason: room.ReasonQueue})
			}
		}
	}
	for _, q := range m.order {
		switch {
		case draining:
			var order []fleet.Node
			if !local {
				// Where the playlist gathers first, as everyone else
				// computes it (see drainOrder).
				order = drainOrder(q, nodes, self)
			}
			for _, e := range q.waiting {
				to := slices.IndexFunc(order, func(n fleet.Node) bool { return !e.blocked(n.ID, now) })
				switch {
				case to < 0:
					if !e.told {
						e.told = true
						tell = append(tell, e.id)
					}
				case movable(e, true):
					moves = append(moves, plannedMove{e: e, to: order[to], reason: room.ReasonDrain})
				}
			}
		case local:
			if selfOpen {
				gather(q, nil) // no other server: those without room wait
			}
		default:
			order := gatherOrder(q.pl.Name, q.pl.size(), nodes, "")
			switch {
			case len(order) == 0:
				// No server has room for a match: everyone waits where
				// they are.
			case order[0].ID == self, now.Before(q.received) && roomFor(selfNode, q.pl.size()):
				gather(q, order)
			default:
				for _, e := range q.waiting {
					// A player is not sent back to where it came from
					// while that may be a stale view: it waits here.
					if movable(e, false) && !e.blocked(order[0].ID, now) {
						moves = append(moves, plannedMove{e: e, to: order[0], reason: room.ReasonQueue})
					}
				}
			}
		}
	}
	for i := range moves {
		e := moves[i].e
		moves[i].ho = e.handoff(now, self, draining)
	}
	for _, mv := range moves {
		mv.e.q.remove(mv.e)
		mv.e.state = moving
	}
	m.mu.Unlock()

	// The rooms are opened together: each claims its players for the
	// fleet, a backplane call that may wait for its deadline (Redis slow
	// or stalled), and one after another the last of k matches would wait
	// k deadlines for its room, and the queue behind them.
	var opening errgroup.Group
	opening.SetLimit(maxOpening)
	for _, mt := range matches {
		opening.Go(func() error {
			m.open(ctx, mt)
			return nil
		})
	}
	_ = opening.Wait() // no Go function returns an error
	m.moveAll(ctx, moves)
	m.kit.Tell(tell...)

	m.mu.Lock()
	defer m.mu.Unlock()
	if st, ok := f.(statSetter); ok {
		for _, q := range m.order {
			st.SetStat(q.stat, int64(len(q.waiting)))
		}
	}
	return len(m.players)
}

// maxOpening bounds the rooms one round opens at once, and the players it
// hands to other servers at once, so that a burst of them does not take
// from the heartbeat every connection to Redis (go-redis keeps ten per
// CPU): k matches wait at most k/maxOpening call deadlines, rounded up,
// for their rooms while Redis stalls, and so does a round's queue behind
// k hand-overs.
const maxOpening = 8

// errSeatedMeanwhile marks a planned move of a player seated since it was
// planned: it is dropped from the queue, not moved.
var errSeatedMeanwhile = errors.New("matchmaking: seated meanwhile")

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

// moveAll hands each player to its target: handoff first, then redirect.
// A player whose move fails keeps its place.
func (m *Module) moveAll(ctx context.Context, moves []plannedMove) {
	// The moves are made together, as the rooms are opened: each writes
	// a handoff first, a backplane call that may wait for its deadline.
	errs := make([]error, len(moves))
	var moving errgroup.Group
	moving.SetLimit(maxOpening)
	for i, mv := range moves {
		if m.kit.Env.RoomOf(mv.e.id) != "" { // seated meanwhile (a lobby's match): not ours to move
			errs[i] = errSeatedMeanwhile
			continue
		}
		moving.Go(func() error {
			ho, err := mv.ho.encode()
			if err == nil {
				err = m.kit.Env.MovePlayer(ctx, mv.e.id, mv.to, mv.reason, ho)
			}
			errs[i] = err // each move's error is its own, not the group's
			return nil
		})
	}
	_ = moving.Wait()
	var failed int
	var firstErr error
	for i, mv := range moves {
		err := errs[i]
		if err == errSeatedMeanwhile {
			m.mu.Lock()
			m.forget(mv.e)
			m.mu.Unlock()
			continue
		}
		m.mu.Lock()
		switch {
		case err == nil || errors.Is(err, room.ErrGone) || m.players[mv.e.id] != mv.e:
			m.forget(mv.e)
		default:
			if errors.Is(err, room.ErrNoRedirect) && !m.noRedirect {
				m.noRedirect = true
				m.kit.Logger.Info("the game sends no redirect packet; queues stay on every server")
			} else if !errors.Is(err, room.ErrCooldown) {
				failed++
				if firstErr == nil {
					firstErr = err
				}
			}
			if m.kit.Env.Connected(mv.e.id) {
				mv.e.q.add(mv.e)
			} else {
				m.forget(mv.e)
			}
		}
		m.mu.Unlock()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case failed > 0 && !m.failing:
		m.failing = true
		m.kit.Logger.Warn("hand queue places to other servers; the players keep their place", "players", failed, "err", firstErr)
	case failed == 0 && len(moves) > 0 && m.failing:
		m.failing = false
		m.kit.Logger.Info("queue hand-overs work again")
	}
}

// forget drops e from the players, unless a newer entry replaced it.
// m.mu must be held.
func (m *Module) forget(e *entry) {
	if m.players[e.id] == e {
		delete(m.players, e.id)
	}
}

// tellRest tells the players still waiting at the drain timeout who were
// not told yet that the server drains.
func (m *Module) tellRest() {
	m.mu.Lock()
	var tell []string
	for _, e := range m.players {
		if !e.told {
			e.told = true
			tell = append(tell, e.id)
		}
	}
	m.mu.Unlock()
	m.kit.Tell(tell...)
}
