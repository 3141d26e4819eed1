package room

import (
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Room is one running room: its Sim, its seats, and the queue of events
// (joins, leaves, inputs) applied before its next step. The game's hooks
// receive it; its methods are safe to call from the hooks, and Broadcast,
// Send, Players and End from any goroutine.
type Room[Sim, Input, Player any] struct {
	// The fields a pass reads come first, so that a pass of a room
	// without news touches as few cache lines as it can: with many
	// thousands of rooms, each pass starts with a cache miss.
	busy atomic.Bool
	// dirty says the room has events queued or was asked to end, so a
	// pass without news takes no lock.
	dirty atomic.Bool
	// away says every seated player is disconnected; the room is
	// abandoned at awayUntil on the scheduler's clock. Both are written
	// under mu, awayUntil first.
	away      atomic.Bool
	awayUntil atomic.Int64
	load      atomic.Int64
	last      uint64 // scheduler tick of the last pass; worker only
	steps     uint64 // steps run; worker only
	host      *Host[Sim, Input, Player]
	sim       Sim

	info     Info
	mu       sync.Mutex
	inbox    []event[Input]
	spare    []event[Input]
	seats    map[string]*seat[Player]
	ended    bool
	endAsked string // End was called; the room ends after its pass

	watchMu    sync.Mutex // orders the states sent to RoomWatchers
	watchEnded bool       // the last state was sent

	props map[string]string // the game's properties (properties.go), under mu

	// mv is the move to another server under way (migrate.go), under mu:
	// the pass freezes the room at its end, then steps it no more.
	mv *moving
	// ck is the checkpoint asked (checkpoint.go), under mu: the pass takes
	// the room's snapshot at its end and steps on.
	ck *checkpointAsk
}

type seat[Player any] struct {
	player Player
	joined bool // the game's Join has run
	// awayTold says the game's PlayerAway ran, and PlayerBack has not
	// since (presence.go); worker only.
	awayTold bool
	client   *Client // nil while the player is away
}

type eventKind uint8

const (
	evJoin eventKind = iota
	evLeave
	evInput
)

type event[Input any] struct {
	kind  eventKind
	id    string
	input Input
}

// ID returns the room's id.
func (r *Room[Sim, Input, Player]) ID() string { return r.info.ID }

// Info returns what the room was opened with.
func (r *Room[Sim, Input, Player]) Info() Info { return r.info }

// Sim returns the room's state. Only the game's hooks may use it. It is
// returned by value, which is why New wants a Sim that is a pointer or a
// map (ErrSimKind): the hooks change the state it points to.
func (r *Room[Sim, Input, Player]) Sim() Sim { return r.sim }

// Dt returns the length of one fixed step: a second divided by the host's
// Config.Rate.
func (r *Room[Sim, Input, Player]) Dt() time.Duration { return r.host.sched.period }

// Step returns the number of the step running (in FixedStep) or last run.
func (r *Room[Sim, Input, Player]) Step() uint64 { return r.steps }

// Players returns the ids of the players seated, present or away.
func (r *Room[Sim, Input, Player]) Players() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, 0, len(r.seats))
	for id := range r.seats {
		ids = append(ids, id)
	}
	return ids
}

// Broadcast sends p to every seated player who is connected. It encodes p
// once, at once, in the call: the frame holds the Sim as it is then, so a
// hook may change the Sim after it. The frame is queued on each
// connection's send queue, in the order of the room's Broadcasts and
// Sends, and written by the connection's own goroutine: Broadcast never
// waits for the network. A client whose send queue is full is
// disconnected rather than allowed to hold the room back. A player away
// does not get it later: a game sends a player who comes back
// (PlayerBack) the state it needs.
func (r *Room[Sim, Input, Player]) Broadcast(p Packet) {
	frame, err := r.host.encode(p)
	if err != nil {
		r.host.logger.Error("encode broadcast", "room_id", r.info.ID, "err", err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.seats {
		if s.client != nil {
			s.client.sendFrame(frame)
		}
	}
}

// Send sends p to the seated player id, if connected.
func (r *Room[Sim, Input, Player]) Send(id string, p Packet) {
	r.mu.Lock()
	s := r.seats[id]
	var c *Client
	if s != nil {
		c = s.client
	}
	r.mu.Unlock()
	if c != nil {
		c.Send(p)
	}
}

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

// ReasonLeft is the room_end reason sent to a player removed from its room
// for good: it sent "leave", Unseat was called, or another server now
// holds its claim.
const ReasonLeft = "left"

// End ends the room after the current pass with reason. Every seated
// player is released and told; connected players stay connected and can
// queue again.
func (r *Room[Sim, Input, Player]) End(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.endAsked == "" {
		r.endAsked = reason
	}
	r.dirty.Store(true)
}

// Ended reports whether the room has ended, or End was called and the
// room ends after the current pass. A game's Input can check it to ignore
// what comes after the input that decided the match, in the same pass.
func (r *Room[Sim, Input, Player]) Ended() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ended || r.endAsked != ""
}

// push queues an event for the next pass.
func (r *Room[Sim, Input, Player]) push(e event[Input]) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return false
	}
	r.inbox = append(r.inbox, e)
	r.dirty.Store(true)
	return true
}

func (r *Room[Sim, Input, Player]) busyFlag() *atomic.Bool { return &r.busy }

func (r *Room[Sim, Input, Player]) lastTick() uint64 { return r.last }

// pass runs on a worker: the events queued since the last pass, then the
// steps due at the room's tick t (more than one when the room fell behind,
// at most MaxCatchUp), then AfterSteps. A panic in the game ends the room.
func (r *Room[Sim, Input, Player]) pass(t uint64, now time.Duration) (alive bool) {
	h := r.host
	defer func() {
		if p := recover(); p != nil {
			h.logger.Error("room panicked; ended", "room_id", r.info.ID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			r.finish(ReasonPanic)
			alive = false
		}
	}()
	var events []event[Input]
	if r.dirty.Load() {
		r.mu.Lock()
		if r.ended {
			r.mu.Unlock()
			return false
		}
		if r.mv != nil && r.mv.frozen {
			r.mu.Unlock()
			return true // moving: it steps no more unless the move is undone
		}
		if r.endAsked == "" && r.mv == nil && r.ck == nil {
			r.dirty.Store(false)
		}
		events = r.inbox
		r.inbox = r.spare[:0]
		r.mu.Unlock()
	}

	due := uint64(1)
	if r.last != 0 {
		due = min(t-r.last, uint64(h.cfg.MaxCatchUp))
	}
	r.last = t
	if h.before != nil {
		h.before.BeforeSteps(r)
	}
	if len(events) > 0 {
		r.apply(events)
	}
	if events != nil {
		r.mu.Lock()
		r.spare = events[:0]
		r.mu.Unlock()
	}
	for range due {
		r.steps++
		h.game.FixedStep(r)
	}
	if h.after != nil {
		h.after.AfterSteps(r)
	}
	if h.loader != nil {
		r.load.Store(int64(h.loader.LoadOf(r.sim)))
	}

	if r.dirty.Load() {
		r.mu.Lock()
		why, mv, ck := r.endAsked, r.mv, r.ck
		r.mu.Unlock()
		if why != "" {
			r.finish(why)
			return false
		}
		if mv != nil {
			r.freeze(mv)
			return true
		}
		if ck != nil {
			r.checkpoint(ck)
		}
	}
	if r.abandoned(now) {
		r.finish(ReasonAbandoned)
		return false
	}
	return true
}

// tellEnded runs the game's RoomEnded hook, if any; a panic in it is
// logged and goes no further.
func (r *Room[Sim, Input, Player]) tellEnded(why string) {
	h := r.host
	if h.ender == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			h.logger.Error("RoomEnded panicked", "room_id", r.info.ID, "panic", fmt.Sprint(p))
		}
	}()
	h.ender.RoomEnded(r, why)
}

// seatsChanged keeps the room's load (its seated players, for a game
// without a Loader) and its away flag current after a seat was added or
// removed, or a player connected or went away. r.mu must be held.
func (r *Room[Sim, Input, Player]) seatsChanged() {
	if r.host.loader == nil {
		r.load.Store(int64(len(r.seats)))
	}
	present := 0
	for _, s := range r.seats {
		if s.client != nil {
			present++
		}
	}
	away := len(r.seats) > 0 && present == 0
	if away && !r.away.Load() {
		r.awayUntil.Store(int64(r.host.sched.since() + r.host.cfg.AwayTimeout))
	}
	r.away.Store(away)
}

// abandoned reports whether every seated player has been away for the
// host's AwayTimeout at now, on the scheduler's clock. It takes no lock
// and reads no clock: a room waiting for its players costs a pass no
// more than one with them.
func (r *Room[Sim, Input, Player]) abandoned(now time.Duration) bool {
	return r.away.Load() && now >= time.Duration(r.awayUntil.Load())
}

// apply runs the game's Join, Leave and Input for events, in arrival
// order.
func (r *Room[Sim, Input, Player]) apply(events []event[Input]) {
	h := r.host
	for _, e := range events {
		r.mu.Lock()
		s := r.seats[e.id]
		r.mu.Unlock()
		if s == nil {
			continue
		}
		switch e.kind {
		case evJoin:
			if s.joined {
				continue
			}
			if h.admit != nil {
				if err := h.admit.Admit(r, e.id); err != nil {
					r.refuse(e.id, err)
					continue
				}
			}
			s.player, s.joined = h.game.Join(r, e.id), true
		case evLeave:
			if s.joined {
				h.game.Leave(r, s.player)
			}
			c, empty := r.dropSeat(e.id)
			h.unseat(e.id, r.info.ID)
			if c != nil {
				// After the seat is gone, so that nothing the room
				// sends reaches the player after this.
				c.Send(roomOutPacket{Type: "room_end", Room: r.info.ID, Reason: ReasonLeft})
			}
			h.roomChanged(r, false, nil)
			if empty {
				r.End(ReasonAbandoned)
			}
		case evInput:
			if s.joined {
				h.game.Input(r, s.player, e.input)
			}
		case evAway, evBack:
			r.presence(e.kind, s)
		}
	}
	clear(events) // drop references to inputs
}

// refuse unseats player id, whom the game's Admit refused, and tells it.
func (r *Room[Sim, Input, Player]) refuse(id string, err error) {
	h := r.host
	_, empty := r.dropSeat(id)
	h.unseat(id, r.info.ID)
	h.Send(id, roomOutPacket{Type: "join_refused", Room: r.info.ID, Reason: truncate(err.Error(), 200)})
	h.roomChanged(r, false, nil)
	if empty {
		r.End(ReasonAbandoned)
	}
}

// dropSeat removes player id's seat, and returns the connection the seat
// had (nil while the player is away) and whether no seat is left: a room
// whose last player left, or was refused, has no one to wait for, and
// ends (ReasonAbandoned) after the pass.
func (r *Room[Sim, Input, Player]) dropSeat(id string) (c *Client, empty bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.seats[id]; s != nil {
		c = s.client
	}
	delete(r.seats, id)
	r.seatsChanged()
	return c, len(r.seats) == 0
}

// finish ends the room: the game's RoomEnded runs, seats are released
// and connected players told.
func (r *Room[Sim, Input, Player]) finish(why string) {
	r.mu.Lock()
	if r.ended {
		r.mu.Unlock()
		return
	}
	r.ended = true
	mv, ck := r.mv, r.ck
	r.ck = nil
	r.mu.Unlock()
	if mv != nil {
		mv.done(nil, errRoomEnded)
	}
	if ck != nil {
		ck.done(nil, errRoomEnded)
	}
	r.tellEnded(why)
	r.mu.Lock()
	seats := r.seats
	r.seats = map[string]*seat[Player]{}
	r.seatsChanged()
	r.inbox = nil
	r.mu.Unlock()
	r.host.roomEnded(r, seats, why)
}
