package lobby

import "github.com/muster-gg/muster/room"

// MoveOut implements room.RoomMover: a match a lobby started stays on its
// server (a drain lets it finish there, as before rooms moved), since the
// lobby it returns to does not move with it yet; other rooms may move.
func (m *Module) MoveOut(info room.Info) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return nil, m.rooms[info.ID] == nil
}

// MoveIn implements room.RoomMover: the module takes no part in a room
// moved here.
func (m *Module) MoveIn(room.Info, []byte) (any, error) { return nil, nil }
