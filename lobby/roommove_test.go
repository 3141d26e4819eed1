package lobby

import (
	"testing"

	"github.com/muster-gg/muster/room"
)

func TestLobbyMatchStays(t *testing.T) {
	m, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	m.rooms["r1"] = &lobby{code: "ABCDE", room: "r1"}
	if _, ok := m.MoveOut(room.Info{ID: "r1", Kind: "lobby"}); ok {
		t.Error("a lobby's match may move without its lobby")
	}
	if _, ok := m.MoveOut(room.Info{ID: "r2", Kind: "duel"}); !ok {
		t.Error("the module keeps a room that is not a lobby's")
	}
}
