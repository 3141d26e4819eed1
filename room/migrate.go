package room

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/muster-gg/muster/fleet"
)

// A drain moves the rooms of a game that implements Migrator to the other
// servers rather than waiting for them to end. Each room, in turn (a few
// at once):
//
//  1. the modules that keep state of it (RoomMover) give theirs, or keep
//     the room here;
//  2. at the end of its next pass the room is frozen: its worker takes the
//     game's Snapshot and its seats, and steps it no more;
//  3. the snapshot, signed, goes straight to a live server that is ready
//     and has room (the one with the most free load), over its internal
//     address (PathMove);
//  4. that server claims the seated players over this one, in one round
//     trip, and resumes the room at the same step under the same id;
//  5. here the room is forgotten (the game's RoomEnded does not run: the
//     match goes on) and every connected player is redirected there with
//     a fresh ticket, reason ReasonMigrate. A player away at the time
//     finds the room there when it comes back, as for any rejoin.
//
// A room that cannot move (no server to take it, a snapshot over
// Migrate.MaxBytes, the target refuses or does not answer within
// Migrate.Timeout, a module keeps it) is unfrozen, catches up the steps
// it missed (at most MaxCatchUp) and finishes here as it would have.

// ReasonMigrate is the reason of the redirect that sends a player after
// its room, which moved to another server: the client reconnects there and
// is back in the same room (same id), a little later in the match.
const ReasonMigrate = "migrate"

// moveParallel is how many rooms one drain moves at once.
const moveParallel = 64

// moveTries is how many servers a room is offered to before it stays.
const moveTries = 2

// moving is a move of a room under way, from the ask to its end.
type moving struct {
	// frozen says the room's worker took the snapshot: the room steps no
	// more until the move is done or undone. Under the room's mu.
	frozen bool

	once  sync.Once
	ready chan struct{} // closed once snap or err is set
	snap  *snapshot
	err   error
	at    time.Time // when the room was frozen
}

func newMoving() *moving { return &moving{ready: make(chan struct{})} }

// done hands the worker's snapshot (or why there is none) to the mover.
func (m *moving) done(s *snapshot, err error) {
	m.once.Do(func() {
		m.snap, m.err, m.at = s, err, time.Now()
		close(m.ready)
	})
}

// errRoomEnded is a move's error for a room that ended before it froze.
var errRoomEnded = errors.New("the room ended")

// canMove reports whether this host moves its rooms when it drains: the
// game implements Migrator, migration is on, a fleet is bound, and the
// game redirects players.
func (h *Host[Sim, Input, Player]) canMove() bool {
	if h.migrator == nil || h.cfg.Migrate.Disabled || h.fleet == nil {
		return false
	}
	if rd, ok := h.game.(Redirector); ok && rd.Redirect(Redirect{NodeID: "probe", Reason: ReasonMigrate}) == nil {
		return false
	}
	return true
}

// moveRooms moves every running room it can to other servers, a few at a
// time, and returns when each has moved or stayed, or ctx ends.
func (h *Host[Sim, Input, Player]) moveRooms(ctx context.Context) {
	if !h.canMove() {
		return
	}
	rooms := h.runningRooms()
	if len(rooms) == 0 {
		return
	}
	pick := newPicker(h.fleet.ID(), h.fleet.Nodes())
	if pick.empty() {
		h.logger.Warn("no server to move the rooms to; they finish here", "rooms", len(rooms))
		return
	}
	start := time.Now()
	sem := make(chan struct{}, moveParallel)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		moved    int
		maxPause time.Duration
	)
	for _, r := range rooms {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if pause, ok := h.moveRoom(ctx, r, pick); ok {
				mu.Lock()
				moved, maxPause = moved+1, max(maxPause, pause)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	h.logger.Info("rooms moved", "moved", moved, "left", h.Rooms(), "took", time.Since(start).Round(time.Millisecond),
		"pause_max", maxPause.Round(time.Millisecond))
}

// moveRoom moves room r to a server pick chooses, or leaves it here. It
// returns the move's pause and whether the room moved.
func (h *Host[Sim, Input, Player]) moveRoom(ctx context.Context, r *Room[Sim, Input, Player], pick *picker) (time.Duration, bool) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Migrate.Timeout)
	defer cancel()
	data, mods, err := h.roomMoveData(r)
	if errors.Is(err, errModuleKeeps) {
		return 0, false
	}
	if err != nil {
		h.logger.Warn("the room stays", "room_id", r.info.ID, "err", err)
		h.moves.failed.Add(1)
		return 0, false
	}
	mv, ok := r.askMove()
	if !ok {
		return 0, false
	}
	select {
	case <-mv.ready:
	case <-ctx.Done():
		r.unfreeze(mv)
		return 0, false
	}
	if mv.err != nil {
		if !errors.Is(mv.err, errRoomEnded) {
			h.logger.Warn("the game's Snapshot failed; the room stays", "room_id", r.info.ID, "err", mv.err)
			h.moves.failed.Add(1)
		}
		return 0, false
	}
	s := mv.snap
	s.From, s.Data, s.Modules = h.fleet.ID(), data, mods
	load := int(r.load.Load())
	var tried []string
	for range moveTries {
		to, ok := pick.take(load, tried)
		if !ok {
			break
		}
		tried = append(tried, to.ID)
		err := h.offerRoom(ctx, r, s, to)
		if err == nil {
			return h.movedAway(ctx, r, to, mv.at), true
		}
		pick.give(to.ID, load)
		h.logger.Warn("room not moved", "room_id", r.info.ID, "to", to.ID, "err", err)
		if errors.Is(err, errTooLarge) || ctx.Err() != nil {
			break
		}
	}
	h.moves.failed.Add(1)
	r.unfreeze(mv)
	return 0, false
}

// errTooLarge is the error of a snapshot over Migrate.MaxBytes.
var errTooLarge = errors.New("snapshot too large")

// offerRoom sends snapshot s of r to server to. It returns nil once the
// room runs there: on an answer that is not a refusal (the server may have
// taken the room and its answer was lost), the room's seats are looked up,
// and the room has moved if to holds them.
func (h *Host[Sim, Input, Player]) offerRoom(ctx context.Context, r *Room[Sim, Input, Player], s *snapshot, to fleet.Node) error {
	s.To = to.ID
	s.Expires = time.Now().Add(h.cfg.Migrate.Timeout).UnixMilli()
	sealed, err := sealSnapshot(h.moveKey, s)
	if err != nil {
		return err
	}
	if len(sealed) > h.cfg.Migrate.MaxBytes {
		return fmt.Errorf("%w: %d bytes, over muster.room.migrate.max-bytes %d", errTooLarge, len(sealed), h.cfg.Migrate.MaxBytes)
	}
	err = h.sendRoom(ctx, to, sealed)
	if err == nil || errors.Is(err, ErrSnapshot) || len(s.Seats) == 0 {
		return err
	}
	// No answer: did it take the room?
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.fleet.Config().CallTimeout)
	defer cancel()
	if n, lerr := h.fleet.Locate(lctx, fleet.KindPlayer, s.Seats[0].ID); lerr == nil && n.ID == to.ID {
		return nil
	}
	return err
}

// errModuleKeeps is roomMoveData's error for a room a module keeps here.
var errModuleKeeps = errors.New("a module keeps the room here")

// roomMoveData returns what travels with room r beside its snapshot: its
// Info.Data as JSON, and what the modules keep of it (moveOut).
func (h *Host[Sim, Input, Player]) roomMoveData(r *Room[Sim, Input, Player]) (json.RawMessage, map[string][]byte, error) {
	mods, ok := h.moveOut(r.info)
	if !ok {
		return nil, nil, errModuleKeeps
	}
	if r.info.Data == nil {
		return nil, mods, nil
	}
	data, err := json.Marshal(r.info.Data)
	if err != nil {
		return nil, nil, fmt.Errorf("the room's Info.Data does not encode: %w", err)
	}
	return data, mods, nil
}

// moveOut asks the modules that keep state of rooms (RoomMover) for what
// travels with room info, and reports false when one keeps it here.
func (h *Host[Sim, Input, Player]) moveOut(info Info) (map[string][]byte, bool) {
	var mods map[string][]byte
	for _, m := range h.modules {
		rm, ok := m.(RoomMover)
		if !ok {
			continue
		}
		data, ok := rm.MoveOut(info)
		if !ok {
			return nil, false
		}
		if data != nil {
			if mods == nil {
				mods = make(map[string][]byte)
			}
			mods[moduleName(m)] = data
		}
	}
	return mods, true
}

// moduleName names module m in a snapshot: its type.
func moduleName(m Module) string { return fmt.Sprintf("%T", m) }

// askMove asks r's worker to freeze it at the end of its next pass. It
// reports false for a room that ended, is ending, or is moving already.
func (r *Room[Sim, Input, Player]) askMove() (*moving, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended || r.endAsked != "" || r.mv != nil {
		return nil, false
	}
	mv := newMoving()
	r.mv = mv
	r.dirty.Store(true)
	return mv, true
}

// unfreeze lets r step again after a move that did not happen.
func (r *Room[Sim, Input, Player]) unfreeze(mv *moving) {
	r.mu.Lock()
	if r.mv == mv {
		r.mv = nil
		r.dirty.Store(true) // the next pass runs as any other
	}
	r.mu.Unlock()
	mv.done(nil, errRoomEnded) // a worker that freezes it later finds r.mv changed
}

// movedAway forgets room r, which now runs on server to, and redirects
// its connected players there; it returns the move's pause, from the
// room's freeze. The game's RoomEnded and the modules'
// RoomEndHandlers do not run: the match goes on. The claims of its
// players are let go of (the release removes only this server's claims,
// and to has claimed them over it already).
func (h *Host[Sim, Input, Player]) movedAway(ctx context.Context, r *Room[Sim, Input, Player], to fleet.Node, frozen time.Time) (pause time.Duration) {
	pause = time.Since(frozen)
	r.mu.Lock()
	r.ended = true
	seats := r.seats
	r.seats = map[string]*seat[Player]{}
	r.seatsChanged()
	r.inbox = nil
	r.mu.Unlock()
	h.mu.Lock()
	clients := h.forgetRoomLocked(r, seats, nil)
	h.mu.Unlock()
	h.kickReleases()
	h.roomGone(r.info.ID)
	h.moves.record(pause)
	h.roomChanged(r, true, slices.Collect(maps.Keys(seats)))
	h.uncount(ctx, clients...) // one write of the players stat for the room
	for _, c := range clients {
		if p := h.redirectPacket(c.id, to, ReasonMigrate); p != nil {
			h.tellToGo(c, p, ReasonMigrate)
		}
	}
	select {
	case h.roomEnd <- struct{}{}:
	default:
	}
	return pause
}

// picker chooses the servers a drain moves its rooms to: ready, with
// room, not this one; the one with the most free load first, counting
// the rooms sent to each since the drain began.
type picker struct {
	mu    sync.Mutex
	nodes []fleet.Node
}

func newPicker(self string, nodes []fleet.Node) *picker {
	nodes = slices.DeleteFunc(slices.Clone(nodes), func(n fleet.Node) bool {
		return n.ID == self || !n.HasRoom() || n.InternalAddress == ""
	})
	return &picker{nodes: nodes}
}

func (p *picker) empty() bool { return len(p.nodes) == 0 }

// take returns the server with the most free load that has room for load
// and is not in skip, and counts load on it.
func (p *picker) take(load int, skip []string) (fleet.Node, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := -1
	for i, n := range p.nodes {
		if slices.Contains(skip, n.ID) || n.MaxLoad-n.Load < max(load, 1) {
			continue
		}
		if best < 0 || n.MaxLoad-n.Load > p.nodes[best].MaxLoad-p.nodes[best].Load {
			best = i
		}
	}
	if best < 0 {
		return fleet.Node{}, false
	}
	p.nodes[best].Load += load
	return p.nodes[best], true
}

// give takes back the load take counted on server id.
func (p *picker) give(id string, load int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.nodes {
		if p.nodes[i].ID == id {
			p.nodes[i].Load -= load
		}
	}
}
