package lobby

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/muster-gg/muster/room"
)

// MessageTypes implements room.MessageHandler.
func (m *Module) MessageTypes() []string {
	return []string{MsgCreate, MsgJoin, MsgLeave, MsgStart}
}

// HandleMessage implements room.MessageHandler. A refused request is
// answered with an ErrorPacket; only an undecodable one closes the
// connection.
func (m *Module) HandleMessage(ctx context.Context, c *room.Client, typ string, body []byte) error {
	switch typ {
	case MsgCreate:
		m.create(ctx, c.ID(), c.CooldownFrom())
	case MsgJoin:
		var req struct {
			Code string `json:"code"`
		}
		if err := m.kit.Codec.Unmarshal(body, &req); err != nil {
			return fmt.Errorf("lobby.join: %w", err)
		}
		m.joinFrom(ctx, c.ID(), c.IP(), req.Code, c.CooldownFrom())
	case MsgLeave:
		m.leave(ctx, c.ID())
	case MsgStart:
		m.start(ctx, c.ID())
	}
	return nil
}

// Arrived implements room.ArrivalHandler: a player who brings a lobby
// handoff joins its lobby here, re-creating it under the same code when
// the whole lobby moved, or creates one.
func (m *Module) Arrived(ctx context.Context, c *room.Client, ho room.Handoff) {
	m.arrive(ctx, c.ID(), ho, c.CooldownFrom(), time.Now())
}

// Disconnected implements room.DisconnectHandler: a member whose
// connection ends leaves its lobby, unless the lobby's match is running
// (it may come back to its seat) or it is being moved.
func (m *Module) Disconnected(c *room.Client) {
	if m.kit.Env.Connected(c.ID()) {
		return // replaced by a newer connection
	}
	m.disconnected(c.ID())
}

// disconnected is Disconnected for player id, no longer connected here.
func (m *Module) disconnected(id string) {
	m.mu.Lock()
	delete(m.waits, id)
	l := m.players[id]
	if l == nil {
		m.mu.Unlock()
		return
	}
	mem := l.member(id)
	switch {
	case mem.moving:
		m.mu.Unlock()
		return
	case l.room != "":
		mem.present = false
		m.mu.Unlock()
		m.broadcast(l)
		return
	}
	closed := m.removeLocked(l, id)
	m.mu.Unlock()
	m.closedOrChanged(context.Background(), l, closed)
}

// RoomEnded implements room.RoomEndHandler: a lobby whose match ended is
// open again; members who left during the match are dropped. On a
// draining server the lobby then moves. It runs on a step worker and does
// no I/O: a closed lobby's code is released by the fleet's own goroutine.
func (m *Module) RoomEnded(info room.Info, _ string) {
	m.mu.Lock()
	l := m.rooms[info.ID]
	delete(m.rooms, info.ID)
	if l == nil || l.room != info.ID {
		m.mu.Unlock()
		return
	}
	l.room = ""
	closed := false
	for _, mem := range slices.Clone(l.members) {
		if !mem.present && mem.expect.IsZero() {
			closed = m.removeLocked(l, mem.id)
		}
	}
	m.mu.Unlock()
	m.closedOrChanged(context.Background(), l, closed)
}

// fail sends player id the refusal err.
func (m *Module) fail(id string, err error) {
	m.kit.Env.Send(id, ErrorPacket{Type: TypeError, Error: err.Error()})
}
