package room

import (
	"context"
	"errors"
	"slices"
)

// RoomState is what a RoomWatcher is told of a room.
type RoomState struct {
	// ID is the room's id (see Info.ID).
	ID string
	// Kind says who opened it (Info.Kind).
	Kind string
	// Players are the ids seated, present or away, sorted.
	Players []string
	// Ended is true in the last state of a room.
	Ended bool
	// Properties are the game's properties of the room (Room.SetProperty);
	// nil when it has none. The watcher may keep the map: it is a copy.
	Properties map[string]string
}

// RoomWatcher is told of every room's state: when it opens, when a seat is
// added or removed, when the game changes one of its properties
// (Room.SetProperty), and when it ends (Ended set). A module that implements
// it is told, and so is every watcher added with Host.AddRoomWatcher.
//
// RoomChanged may run on a step worker, with the room's other hooks: it
// must not block and must not do I/O; hand the state to a goroutine of
// its own. The states of one room arrive in order. Use refuses a module
// whose RoomChanged has another signature.
type RoomWatcher interface {
	RoomChanged(s RoomState)
}

// TicketChecker checks tickets that the host's own Tickets refuse, such as
// those a federation's home issued. CheckTicket returns the player id; an
// error that wraps ErrTicket means "not mine" and the next checker is
// asked; any other error (the checker's store is unreachable) refuses the
// connection with 1013, try again later.
type TicketChecker interface {
	CheckTicket(ctx context.Context, ticket string) (playerID string, err error)
}

// AddTicketChecker adds tc to the checkers asked, in the order added, about
// a ticket the host's own Tickets refuse with ErrTicket. Call it before
// Run.
func (h *Host[Sim, Input, Player]) AddTicketChecker(tc TicketChecker) {
	h.checkers = append(h.checkers, tc)
}

// AddRoomWatcher adds w to the watchers told of every room's state (see
// RoomWatcher). Modules that implement RoomWatcher are told without it.
// Call it before Run.
func (h *Host[Sim, Input, Player]) AddRoomWatcher(w RoomWatcher) {
	h.watchers = append(h.watchers, w)
}

// redeem redeems ticket with the host's Tickets, then with each checker.
func (h *Host[Sim, Input, Player]) redeem(ctx context.Context, ticket string) (string, error) {
	id, err := h.tickets.Redeem(ctx, ticket)
	if err == nil || !errors.Is(err, ErrTicket) {
		return id, err
	}
	for _, tc := range h.checkers {
		cid, cerr := tc.CheckTicket(ctx, ticket)
		switch {
		case cerr == nil && cid != "" && len(cid) <= maxPlayerID:
			return cid, nil
		case cerr == nil:
			return "", errors.Join(ErrTicket, errors.New("checker gave a bad player id"))
		case !errors.Is(cerr, ErrTicket):
			return "", cerr
		}
	}
	return "", err
}

// roomChanged tells the watchers of r's state: its seats, or players for
// its last state (ended). The state is read and sent under r.watchMu, so
// that the states of one room arrive in order. r.mu must not be held.
func (h *Host[Sim, Input, Player]) roomChanged(r *Room[Sim, Input, Player], ended bool, players []string) {
	if len(h.watchers) == 0 {
		return
	}
	r.watchMu.Lock()
	defer r.watchMu.Unlock()
	if r.watchEnded {
		return
	}
	r.watchEnded = ended
	if !ended {
		players = r.Players()
	}
	s := RoomState{ID: r.info.ID, Kind: r.info.Kind, Players: slices.Sorted(slices.Values(players)), Ended: ended, Properties: r.Properties()}
	for _, w := range h.watchers {
		w.RoomChanged(s)
	}
}
