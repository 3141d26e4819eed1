package matchmaking

import (
	"reflect"
	"testing"

	"github.com/muster-gg/muster/room"
)

func TestMatchMovesWithItsRoom(t *testing.T) {
	var m Module
	mt := Match{Playlist: "squad", Teams: [][]string{{"a", "b"}, {"c", "d"}}}
	data, ok := m.MoveOut(room.Info{ID: "r1", Data: mt})
	if !ok || data == nil {
		t.Fatalf("MoveOut = %q, %v; want the match, true", data, ok)
	}
	got, err := m.MoveIn(room.Info{ID: "r1"}, data)
	if err != nil || !reflect.DeepEqual(got, mt) {
		t.Errorf("MoveIn = %#v, %v; want %#v", got, err, mt)
	}
	if data, ok := m.MoveOut(room.Info{ID: "r2", Data: "not a match"}); !ok || data != nil {
		t.Errorf("MoveOut of a room not the module's = %q, %v; want nil, true", data, ok)
	}
	if got, err := m.MoveIn(room.Info{ID: "r2"}, nil); got != nil || err != nil {
		t.Errorf("MoveIn without data = %v, %v; want nil, nil", got, err)
	}
	if _, err := m.MoveIn(room.Info{ID: "r3"}, []byte("{")); err == nil {
		t.Error("MoveIn of a corrupt match took it")
	}
}
