package matchmaking

import (
	"encoding/json"
	"fmt"

	"github.com/muster-gg/muster/room"
)

// MoveOut implements room.RoomMover: a match the module opened moves with
// its playlist and teams (its Info.Data); the module keeps nothing else
// of a running match.
func (m *Module) MoveOut(info room.Info) ([]byte, bool) {
	mt, ok := info.Data.(Match)
	if !ok {
		return nil, true
	}
	data, err := json.Marshal(mt)
	if err != nil {
		return nil, false
	}
	return data, true
}

// MoveIn implements room.RoomMover: a moved match's Info.Data is its
// Match again.
func (m *Module) MoveIn(_ room.Info, data []byte) (any, error) {
	if data == nil {
		return nil, nil
	}
	var mt Match
	if err := json.Unmarshal(data, &mt); err != nil {
		return nil, fmt.Errorf("matchmaking: a moved match: %w", err)
	}
	return mt, nil
}
