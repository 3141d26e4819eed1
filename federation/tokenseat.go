package federation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/muster-gg/muster/room"
)

// KindHomeRoom is the room.Info.Kind of a room a TokenChecker opened for
// home: its id is home's room id, the one the tokens name.
const KindHomeRoom = "home"

// EndedRoomMemory is how long a TokenChecker remembers a home room that
// ended on its host: a token for it is refused meanwhile (the room is not
// opened again under the same id), since home has been told it ended.
const EndedRoomMemory = time.Hour

// ReasonRoomNotHere is the reason (after "room: invalid ticket: ") of the
// 4001 close, after the welcome, of a player whose home token names a room
// this server does not host: it ended here, or the id names a room of
// another kind, or the server drains. The client asks home again for a
// token, as after any 4001.
const ReasonRoomNotHere = "home token: room not hosted here"

// seater is what a TokenChecker needs of its host beyond room.ModuleHost:
// seating a late joiner in a running room (room.Host.Seat).
type seater interface {
	Seat(ctx context.Context, roomID, id string) error
}

// grant is the room a redeemed token names, for its holder's arrival.
type grant struct {
	room  string
	until time.Time
}

var (
	_ room.Module         = (*TokenChecker)(nil)
	_ room.ArrivalHandler = (*TokenChecker)(nil)
	_ room.RoomWatcher    = (*TokenChecker)(nil)
)

// Attach implements room.Module: with the checker used as a module of the
// node's room host (room.Host.Use; muster.Server does it for
// muster.federation), a player admitted by a home token is seated in the
// room the token names when it arrives. The first holder opens the room
// (Kind KindHomeRoom, with home's id), the next ones join it; a token for
// a home room that ended here is refused (ReasonRoomNotHere). The host must
// seat late joiners (room.Host does).
func (c *TokenChecker) Attach(h room.ModuleHost) error {
	s, ok := h.(seater)
	if !ok {
		return fmt.Errorf("%w: the TokenChecker's host %T cannot seat a joiner (no Seat method)", ErrInvalidConfig, h)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.host != nil {
		return fmt.Errorf("%w: the TokenChecker is attached to a host already", ErrInvalidConfig)
	}
	c.host, c.seat, c.log = h, s, componentLogger(h.Logger())
	return nil
}

// hostedLocked refuses a token for a room this checker's host does not
// host: a home room that ended here, or a room of another kind. c.mu must
// be held.
func (c *TokenChecker) hostedLocked(roomID string, now time.Time) error {
	if at, ok := c.ended[roomID]; ok && now.Sub(at) < EndedRoomMemory {
		return fmt.Errorf("%w: %s (%s ended)", room.ErrTicket, ReasonRoomNotHere, roomID)
	}
	if c.other[roomID] {
		return fmt.Errorf("%w: %s (%s is not a home room)", room.ErrTicket, ReasonRoomNotHere, roomID)
	}
	return nil
}

// grantLocked notes that player may be seated in roomID until until.
// c.mu must be held.
func (c *TokenChecker) grantLocked(player, roomID string, until, now time.Time) {
	if c.host == nil {
		return
	}
	if len(c.grants) >= 1024 {
		for id, g := range c.grants {
			if !now.Before(g.until) {
				delete(c.grants, id)
			}
		}
	}
	c.grants[player] = grant{room: roomID, until: until}
}

// Arrived implements room.ArrivalHandler: it seats a player admitted by a
// home token in the token's room, opening the room on the first arrival.
func (c *TokenChecker) Arrived(ctx context.Context, cl *room.Client, ho room.Handoff) {
	now := c.now()
	c.mu.Lock()
	g, ok := c.grants[cl.ID()]
	delete(c.grants, cl.ID())
	host, s, log := c.host, c.seat, c.log
	c.mu.Unlock()
	if !ok || !now.Before(g.until) || ho.Kind != "" || cl.Room() != "" {
		return
	}
	// One arrival at a time opens or joins a home room, so that two
	// holders arriving together do not both try to open it.
	c.arriveMu.Lock()
	defer c.arriveMu.Unlock()
	c.mu.Lock()
	open, refused := c.home[g.room], c.hostedLocked(g.room, now)
	c.mu.Unlock()
	var err error
	switch {
	case refused != nil:
		err = refused
	case open:
		err = s.Seat(ctx, g.room, cl.ID())
	default:
		err = host.Open(ctx, room.Info{ID: g.room, Kind: KindHomeRoom, Players: []string{cl.ID()}})
	}
	if err != nil {
		c.refuse(log, cl, g.room, err)
	}
}

// refuse closes a holder that cannot be seated in its token's room.
func (c *TokenChecker) refuse(log *slog.Logger, cl *room.Client, roomID string, err error) {
	if errors.Is(err, room.ErrSeated) {
		return // seated meanwhile (a second connection): it plays on there
	}
	log.Info("federation: home token holder not seated", "player_id", cl.ID(), "room_id", roomID, "err", err)
	cl.Close(room.StatusBadTicket, "room: invalid ticket: "+ReasonRoomNotHere)
}

// RoomChanged implements room.RoomWatcher: it keeps which rooms of the
// host are home's, open or ended. It never blocks.
func (c *TokenChecker) RoomChanged(st room.RoomState) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case st.Kind != KindHomeRoom && st.Ended:
		delete(c.other, st.ID)
	case st.Kind != KindHomeRoom:
		c.other[st.ID] = true
	case st.Ended:
		delete(c.home, st.ID)
		if len(c.ended) >= 1024 {
			for id, at := range c.ended {
				if now.Sub(at) >= EndedRoomMemory {
					delete(c.ended, id)
				}
			}
		}
		c.ended[st.ID] = now
	default:
		c.home[st.ID] = true
	}
}
