package federation

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/muster-gg/muster/room"
)

// RoomReporter sends home the whole state of every room of a node's game
// server — its id (home's, for a room home placed), members and the game's
// properties (room.Room.SetProperty) — on every change: it is a
// room.RoomWatcher, for the server's room host (room.Host.AddRoomWatcher,
// or muster.WithRoomWatchers). RoomChanged only notes the latest state of
// the room and never blocks; Run sends the noted states through the Node
// agent, one full snapshot per room, the latest only when a room changed
// several times meanwhile, at most ReportsPerSecond.
//
// NewRoomReporter starts nothing; Run sends until its context ends. Safe
// for concurrent use.
type RoomReporter struct {
	node    *Node
	log     *slog.Logger
	running atomic.Bool
	wake    chan struct{}

	mu      sync.Mutex
	pending map[string]room.RoomState
	open    map[string]room.RoomState // the latest state of every open room
}

var _ room.RoomWatcher = (*RoomReporter)(nil)

// NewRoomReporter returns a reporter that sends through node (whose Run
// must be running for the reports to reach home). When the node's
// announces get through again after failing (home may have ended its rooms
// meanwhile), every open room is sent again.
func NewRoomReporter(node *Node, logger *slog.Logger) *RoomReporter {
	r := &RoomReporter{
		node:    node,
		log:     componentLogger(logger),
		wake:    make(chan struct{}, 1),
		pending: make(map[string]room.RoomState),
		open:    make(map[string]room.RoomState),
	}
	node.whenBack(r.resendAll)
	return r
}

// resendAll notes every open room again.
func (r *RoomReporter) resendAll() {
	r.mu.Lock()
	for id, st := range r.open {
		if _, ok := r.pending[id]; !ok {
			r.pending[id] = st
		}
	}
	r.mu.Unlock()
	r.signal()
}

func (r *RoomReporter) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// RoomChanged implements room.RoomWatcher: it notes st and returns at
// once.
func (r *RoomReporter) RoomChanged(st room.RoomState) {
	st.Players = slices.Clone(st.Players)
	st.Properties = maps.Clone(st.Properties)
	r.mu.Lock()
	r.pending[st.ID] = st
	if st.Ended {
		delete(r.open, st.ID)
	} else {
		r.open[st.ID] = st
	}
	r.mu.Unlock()
	r.signal()
}

// ReportsPerSecond bounds the room reports one RoomReporter sends: a game
// that changes its rooms' properties every step has each room's latest
// state sent, never every state. It stays below home's default rate limit
// of room reports per server key (limits.rooms, 6000 a minute).
const ReportsPerSecond = 50

// Run sends the noted room states until ctx ends, and returns nil then; a
// second concurrent call returns ErrRunning. A snapshot home could not be
// sent is kept by the Node agent and sent again after its next announce.
func (r *RoomReporter) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer r.running.Store(false)
	const gap = time.Second / ReportsPerSecond
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
		}
		for {
			// Wait for the next slot before taking a state, so that the
			// changes made meanwhile are sent as one.
			if wait := gap - time.Since(last); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return nil
				case <-t.C:
				}
			}
			st, ok := r.next()
			if !ok || ctx.Err() != nil {
				break
			}
			last = time.Now()
			err := r.node.ReportRoom(ctx, roomReport(st))
			if err != nil && !errors.Is(err, ErrNotJoined) && ctx.Err() == nil {
				r.log.Debug("federation: room report not delivered yet", "room_id", st.ID, "err", err)
			}
		}
	}
}

// next takes one noted state.
func (r *RoomReporter) next() (room.RoomState, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, st := range r.pending {
		delete(r.pending, id)
		return st, true
	}
	return room.RoomState{}, false
}

// roomReport is a room's state as home takes it: its members, and the
// game's properties with "kind" (room.Info.Kind) unless the game set one.
// Properties home would refuse (over its limits of size and number, or
// with control characters) are left out, the first in key order kept, so
// that the room itself still reaches home.
func roomReport(st room.RoomState) RoomReport {
	rep := RoomReport{RoomID: st.ID, Closed: st.Ended}
	if !st.Ended {
		rep.Members = st.Players
	}
	props := st.Properties
	if _, ok := props["kind"]; !ok && st.Kind != "" {
		props = maps.Clone(props)
		if props == nil {
			props = map[string]string{}
		}
		props["kind"] = st.Kind
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if len(rep.Properties) == maxProperties {
			break
		}
		if checkText("", k, maxPropertyKey, true) != nil || checkText("", props[k], maxPropertyVal, false) != nil {
			continue
		}
		if rep.Properties == nil {
			rep.Properties = make(map[string]string, len(props))
		}
		rep.Properties[k] = props[k]
	}
	return rep
}
