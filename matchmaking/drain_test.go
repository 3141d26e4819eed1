package matchmaking

import (
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"
)

// At a drain's end the host sends the players still here away: one who
// waits takes its place along (the drain's handoff, its waited time); one
// being moved is left to the module; one not queued takes nothing.
func TestReleaseHandsThePlaceOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startCluster(t, clusterOpts{servers: 1})
		n := c.nodes[0]
		c.queue(n, "p1", "duel", ptr(1700.0))
		c.queue(n, "p2", "duel", nil)
		time.Sleep(1500 * time.Millisecond)

		ho, mv := n.mm.Release("p1")
		if ho == nil || mv || ho.Kind != HandoffKind {
			t.Fatalf("Release(p1) = %+v, %v; want its queue handoff", ho, mv)
		}
		var d handoff
		if err := json.Unmarshal(ho.Data, &d); err != nil {
			t.Fatal(err)
		}
		want := handoff{Playlist: "duel", Waited: int64(1500 * time.Millisecond), Rating: 1700, From: n.Srv.ID(), Drain: true}
		if d != want {
			t.Fatalf("handoff %+v, want %+v", d, want)
		}
		if _, ok := n.mm.Waited("p1"); ok || n.mm.Waiting("duel") != 1 {
			t.Fatalf("p1 still queued here after its release (%d waiting)", n.mm.Waiting("duel"))
		}
		if ho, mv := n.mm.Release("p1"); ho != nil || mv {
			t.Fatalf("Release(p1) again = %+v, %v; want nothing", ho, mv)
		}

		n.mm.mu.Lock()
		n.mm.players["p2"].state = moving
		n.mm.mu.Unlock()
		if ho, mv := n.mm.Release("p2"); ho != nil || !mv {
			t.Fatalf("Release(p2) while it is moved = %+v, %v; want it left to the module", ho, mv)
		}
	})
}
