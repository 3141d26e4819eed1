package federation

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/muster-gg/muster/room"
)

// RoomReporter sends home the whole state of every room of a node's game
// server: it is a room.RoomWatcher, for the server's room host
// (room.Host.AddRoomWatcher, or muster.WithRoomWatchers). RoomChanged only
// notes the latest state of the room and never blocks; Run sends the
// noted states through the Node agent, one full snapshot per room, the
// latest only when a room changed several times meanwhile.
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

// Run sends the noted room states until ctx ends, and returns nil then; a
// second concurrent call returns ErrRunning. A snapshot home could not be
// sent is kept by the Node agent and sent again after its next announce.
func (r *RoomReporter) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer r.running.Store(false)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
		}
		for {
			st, ok := r.next()
			if !ok || ctx.Err() != nil {
				break
			}
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

// roomReport is a room's state as home takes it.
func roomReport(st room.RoomState) RoomReport {
	rep := RoomReport{RoomID: st.ID, Closed: st.Ended}
	if !st.Ended {
		rep.Members = st.Players
	}
	if st.Kind != "" {
		rep.Properties = map[string]string{"kind": st.Kind}
	}
	return rep
}
