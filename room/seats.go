package room

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// OpenRoom opens a room and seats info.Players in it (their Join runs
// before the room's first step). Players connected to this host are
// attached to their seats; the others take them when they arrive. With a
// fleet bound, every seated player is claimed. It fails while the server
// drains, for a player already seated, and for an info.ID already open
// here. An empty info.ID is given one unique across the fleet and over
// restarts (r<n>-<random>).
//
// With a fleet bound the players are claimed before they are seated, each
// only if no other live server holds it: when one is held elsewhere (it
// plays on another server, or another server is seating it at this
// instant) the room is not opened, nobody is seated, and the error wraps
// ErrSeated. While the backplane cannot answer, the room opens as on one
// server.
func (h *Host[Sim, Input, Player]) OpenRoom(ctx context.Context, info Info) (*Room[Sim, Input, Player], error) {
	if h.server != nil && h.server.Draining() {
		return nil, ErrDraining
	}
	if err := h.claimSeats(ctx, "open room", info.Players); err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.stopped {
		h.unclaimLocked(info.Players)
		h.mu.Unlock()
		return nil, ErrClosed
	}
	for _, id := range info.Players {
		if h.seated[id] != nil {
			h.unclaimLocked(info.Players)
			h.mu.Unlock()
			h.kickReleases()
			return nil, fmt.Errorf("open room: %w: %s", ErrSeated, id)
		}
	}
	h.nextID++
	if info.ID == "" {
		info.ID = fmt.Sprintf("r%d-%s", h.nextID, h.idTag)
	} else if h.rooms[info.ID] != nil {
		h.unclaimLocked(info.Players)
		h.mu.Unlock()
		h.kickReleases()
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
	h.keepClaims(ctx, info.Players)
	for _, id := range info.Players {
		h.Send(id, roomPacket{Type: "room", Room: info.ID, Kind: info.Kind})
	}
	return r, nil
}

// Seat adds player id to a running room (a late joiner). It fails with
// ErrClosed once the room has ended or is ending (End was called, or its
// last player left), and with ErrSeated for a player seated here or, with
// a fleet bound, claimed by another live server (as OpenRoom).
func (h *Host[Sim, Input, Player]) Seat(ctx context.Context, roomID, id string) error {
	if err := h.claimSeats(ctx, "seat", []string{id}); err != nil {
		return err
	}
	h.mu.Lock()
	r := h.rooms[roomID]
	switch {
	case r == nil:
		h.unclaimLocked([]string{id})
		h.mu.Unlock()
		h.kickReleases()
		return fmt.Errorf("seat %s: room %s: %w", id, roomID, ErrClosed)
	case h.seated[id] != nil:
		h.mu.Unlock()
		return fmt.Errorf("seat: %w: %s", ErrSeated, id)
	}
	c := h.clients[id]
	r.mu.Lock()
	if r.ended || r.endAsked != "" || r.mv != nil {
		// Ended, or ending after the pass under way (the game's End, or
		// the last player left), or moving to another server: a seat now
		// would be dropped with it.
		r.mu.Unlock()
		h.unclaimLocked([]string{id})
		h.mu.Unlock()
		h.kickReleases()
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
	h.keepClaims(ctx, []string{id})
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

// forgetRoomLocked forgets room r and its seats, releasing the claims of
// the players it leaves seated nowhere, and returns the connected ones,
// whose connections are in no room from here on (all at once with the
// room, so that nobody sees the room gone and a player still in it);
// away (may be nil) is called with each player seated nowhere now that is
// not connected. h.mu must be held.
func (h *Host[Sim, Input, Player]) forgetRoomLocked(r *Room[Sim, Input, Player], seats map[string]*seat[Player], away func(id string)) (clients []*Client) {
	delete(h.rooms, r.info.ID)
	for id := range seats {
		if h.seated[id] == r {
			delete(h.seated, id)
		}
		// A player seated in another room by now keeps the claim.
		if h.seated[id] == nil {
			h.releaseLocked(id)
		}
		if c := h.clients[id]; c != nil {
			c.leftRoom(r.info.ID)
			clients = append(clients, c)
		} else if h.seated[id] == nil && away != nil {
			away(id)
		}
	}
	return clients
}

// roomEnded forgets an ended room and its seats, and tells its players.
func (h *Host[Sim, Input, Player]) roomEnded(r *Room[Sim, Input, Player], seats map[string]*seat[Player], why string) {
	end := roomOutPacket{Type: "room_end", Room: r.info.ID, Reason: why}
	now := time.Now()
	h.mu.Lock()
	clients := h.forgetRoomLocked(r, seats, func(id string) {
		// Away (its connection dropped, or the server relaying it
		// stopped): told when it comes back.
		h.missLocked(id, end, now)
	})
	h.mu.Unlock()
	h.kickReleases()
	h.roomGone(r.info.ID)
	players := slices.Collect(maps.Keys(seats))
	h.roomChanged(r, true, players)
	for _, c := range clients {
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
