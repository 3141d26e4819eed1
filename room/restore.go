package room

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/muster-gg/muster/fleet"
)

// receiveRoom takes a room moved here: it checks the sealed snapshot, has
// the modules (RoomMover) and the game (Migrator) restore their parts,
// seats the players as they were, claims them over the server the room
// left (one round trip), and resumes the room at its step. An error
// wrapping ErrSnapshot refuses the room, which then stays where it was.
func (h *Host[Sim, Input, Player]) receiveRoom(ctx context.Context, sealed []byte) error {
	switch {
	case h.migrator == nil:
		return fmt.Errorf("%w: the game does not implement Migrator", ErrSnapshot)
	case h.fleet == nil || h.cfg.Migrate.Disabled:
		return fmt.Errorf("%w: this server takes no rooms", ErrSnapshot)
	case h.server != nil && h.server.Draining():
		return fmt.Errorf("%w: %w", ErrSnapshot, ErrDraining)
	case len(sealed) > h.cfg.Migrate.MaxBytes:
		return fmt.Errorf("%w: %d bytes, over %d", ErrSnapshot, len(sealed), h.cfg.Migrate.MaxBytes)
	}
	r, ids, err := h.buildRoom(sealed, h.fleet.ID(), time.Now())
	if err != nil {
		return err
	}
	if err := h.seatMoved(r, ids); err != nil {
		return err
	}
	// Over the server the room left, whatever it holds: one round trip.
	h.dropQueuedReleases(ids)
	if err := h.fleet.Claim(ctx, fleet.KindPlayer, ids...); err != nil {
		h.logger.Warn("claim a moved room's players; re-asserted when the backplane returns", "room_id", r.info.ID, "players", len(ids), "err", err)
	}
	h.roomChanged(r, false, nil)
	h.sched.add(r)
	h.moves.received.Add(1)
	return nil
}

// buildRoom checks the sealed snapshot of a room moved to server self at
// now, has the modules and the game restore their parts, and returns the
// room, not yet open, with the ids of its seats.
func (h *Host[Sim, Input, Player]) buildRoom(sealed []byte, self string, now time.Time) (*Room[Sim, Input, Player], []string, error) {
	s, err := openSnapshot(h.moveKey, sealed, self, now)
	if err != nil {
		return nil, nil, err
	}
	return h.restoreRoom(s)
}

// restoreRoom has the modules and the game restore their parts of
// snapshot s, checked already, and returns the room, not yet open, with
// the ids of its seats.
func (h *Host[Sim, Input, Player]) restoreRoom(s *snapshot) (*Room[Sim, Input, Player], []string, error) {
	var err error
	info := Info{ID: s.ID, Kind: s.Kind, Players: s.Players}
	if len(s.Data) > 0 {
		info.Data = s.Data
	}
	if info.Data, err = h.moveIn(info, s.Modules); err != nil {
		return nil, nil, err
	}
	sim, players, err := h.restoreGame(info, s.Game)
	if err != nil {
		return nil, nil, err
	}
	r := &Room[Sim, Input, Player]{host: h, info: info, sim: sim, steps: s.Step, props: s.Props,
		seats: make(map[string]*seat[Player], len(s.Seats))}
	ids := make([]string, 0, len(s.Seats))
	for _, st := range s.Seats {
		ids = append(ids, st.ID)
		se := &seat[Player]{joined: st.Joined, awayTold: st.Away}
		if st.Joined {
			p, ok := players[st.ID]
			if !ok {
				return nil, nil, fmt.Errorf("%w: the game's Restore gave no player %q", ErrSnapshot, st.ID)
			}
			se.player = p
		} else {
			r.inbox = append(r.inbox, event[Input]{kind: evJoin, id: st.ID})
		}
		r.seats[st.ID] = se
	}
	return r, ids, nil
}

// seatMoved opens room r, moved here with the seats of ids, unless the
// host stops, its id is open here, or one of ids is seated here. The
// players connected here already take their seats, and are told so (a
// "room" packet), as a player seated by a match is: one whose server died
// came here and was welcomed without its room before the room was resumed
// here.
func (h *Host[Sim, Input, Player]) seatMoved(r *Room[Sim, Input, Player], ids []string) error {
	var present []*Client
	defer func() {
		for _, c := range present {
			c.Send(roomPacket{Type: "room", Room: r.info.ID, Kind: r.info.Kind})
		}
	}()
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.stopped || !h.running:
		return fmt.Errorf("%w: %w", ErrSnapshot, ErrClosed)
	case h.rooms[r.info.ID] != nil:
		return fmt.Errorf("%w: room %q is open here", ErrSnapshot, r.info.ID)
	}
	for _, id := range ids {
		if h.seated[id] != nil {
			return fmt.Errorf("%w: %w: %s", ErrSnapshot, ErrSeated, id)
		}
	}
	h.rooms[r.info.ID] = r
	r.mu.Lock()
	for _, id := range ids {
		h.seated[id] = r
		if c := h.clients[id]; c != nil {
			r.seats[id].client = c
			c.setRoom(r.info.ID)
			present = append(present, c)
		}
	}
	r.dirty.Store(len(r.inbox) > 0)
	r.seatsChanged()
	if h.loader != nil {
		r.load.Store(int64(h.loader.LoadOf(r.sim)))
	}
	r.mu.Unlock()
	return nil
}

// moveIn gives each module that keeps state of rooms (RoomMover) what its
// counterpart on the other server wrote, and returns the room's Info.Data:
// the first a module returns, or info.Data (the JSON it was) when none
// does.
func (h *Host[Sim, Input, Player]) moveIn(info Info, mods map[string][]byte) (any, error) {
	data := info.Data
	set := false
	for _, m := range h.modules {
		rm, ok := m.(RoomMover)
		if !ok {
			continue
		}
		d, err := rm.MoveIn(info, mods[moduleName(m)])
		if err != nil {
			return nil, fmt.Errorf("%w: module %s: %v", ErrSnapshot, moduleName(m), err)
		}
		if d != nil && !set {
			data, set = d, true
		}
	}
	if raw, ok := data.(json.RawMessage); ok && !set {
		return raw, nil
	}
	return data, nil
}
