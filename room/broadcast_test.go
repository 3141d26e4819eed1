package room

import (
	"testing"

	"github.com/muster-gg/muster/internal/testkit/playtest"
)

// Broadcast encodes its packet in the call, as its comment says: what a
// hook changes right after does not change what the players get.
func TestBroadcastEncodesAtOnce(t *testing.T) {
	type snap struct {
		Total int `json:"total"`
	}
	g := newCounter()
	sent := false // worker only
	g.onStep = func(r *Room[*csim, int, *cplayer]) {
		if sent || !r.Present("p1") {
			return
		}
		sent = true
		s := &snap{Total: 1}
		r.Broadcast(map[string]any{"type": "state", "snap": s})
		s.Total = 2 // after the call: not in the frame
	}
	h := newHost(t, g, Config{})
	runHost(t, h)
	srv := newServer(t, h)
	if _, err := h.OpenRoom(t.Context(), Info{ID: "r", Players: []string{"p1"}}); err != nil {
		t.Fatal(err)
	}
	c := playtest.DialPlayer(t, srv.URL, h.Tickets(), "p1", "")
	c.Welcome("rejoin")
	m := c.Next("state")
	if s, _ := m["snap"].(map[string]any); s == nil || s["total"] != float64(1) {
		t.Fatalf("state %v, want the snap as it was when Broadcast was called", m)
	}
}
