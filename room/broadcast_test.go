package room

import (
	"testing"
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
	c := playAlone(t, newHost(t, g, Config{}))
	m := c.Next("state")
	if s, _ := m["snap"].(map[string]any); s == nil || s["total"] != float64(1) {
		t.Fatalf("state %v, want the snap as it was when Broadcast was called", m)
	}
}
