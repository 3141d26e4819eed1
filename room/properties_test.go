package room

import (
	"fmt"
	"testing"
)

// TestSetPropertyTellsWatchers: a property change tells the watchers the
// room's state with its properties; the same value again, and a change
// after the end, tell nobody.
func TestSetPropertyTellsWatchers(t *testing.T) {
	h := newHost(t, newCounter(), Config{})
	w := &watcher{ended: make(chan struct{})}
	h.AddRoomWatcher(w)
	runHost(t, h)
	r, err := h.OpenRoom(t.Context(), Info{ID: "a", Kind: "duel", Players: []string{"p1"}})
	if err != nil {
		t.Fatal(err)
	}
	r.SetProperty("map", "dunes")
	r.SetProperty("map", "dunes")
	r.SetProperty("mode", "ranked")
	r.SetProperty("mode", "")
	r.SetProperty("gone", "")
	r.End("over")
	<-w.ended
	r.SetProperty("map", "late")
	w.mu.Lock()
	var got []string
	for _, s := range w.states {
		got = append(got, fmt.Sprint(s.Properties))
	}
	w.mu.Unlock()
	want := []string{"map[]", "map[map:dunes]", "map[map:dunes mode:ranked]", "map[map:dunes]", "map[map:dunes]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("properties told %v, want %v", got, want)
	}
	if p := r.Properties(); p["map"] != "dunes" || len(p) != 1 {
		t.Fatalf("Properties() = %v", p)
	}
}
