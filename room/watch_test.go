package room

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// watcher records the states it is told.
type watcher struct {
	mu     sync.Mutex
	states []RoomState
	ended  chan struct{}
}

func (w *watcher) RoomChanged(s RoomState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.states = append(w.states, s)
	if s.Ended {
		close(w.ended)
	}
}

func (w *watcher) seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, s := range w.states {
		out = append(out, fmt.Sprintf("%s %s %v %v", s.ID, s.Kind, s.Players, s.Ended))
	}
	return out
}

func TestRoomWatcherToldOfOpenSeatsAndEnd(t *testing.T) {
	h := newHost(t, newCounter(), Config{})
	w := &watcher{ended: make(chan struct{})}
	h.AddRoomWatcher(w)
	runHost(t, h)
	r, err := h.OpenRoom(t.Context(), Info{ID: "a", Kind: "duel", Players: []string{"p2", "p1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Seat(t.Context(), "a", "p3"); err != nil {
		t.Fatal(err)
	}
	h.Unseat("p1")
	testrun.WaitFor(t, "p1 is out of the room", func() bool { return !slices.Contains(r.Players(), "p1") })
	r.End("over")
	<-w.ended
	want := []string{
		"a duel [p1 p2] false",
		"a duel [p1 p2 p3] false",
		"a duel [p2 p3] false",
		"a duel [p2 p3] true",
	}
	if got := w.seen(); !slices.Equal(got, want) {
		t.Fatalf("states\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
