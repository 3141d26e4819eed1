package room_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// playersIn reads the "players" stat of server id's record as the
// backplane holds it now, as any other server's next heartbeat reads it.
func playersIn(t *testing.T, s *hosttest.Server, id string) int64 {
	t.Helper()
	nodes, err := s.Backplane.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, bn := range nodes {
		if bn.ID == id {
			var n fleet.Node
			if err := json.Unmarshal(bn.Data, &n); err != nil {
				t.Fatalf("record of %s: %v", id, err)
			}
			return n.Stat("players")
		}
	}
	t.Fatalf("no record of %s", id)
	return 0
}

// A player redirected from A to B counts once in the fleet: A's record
// stops counting it before the player is told to go, so no server reads
// it on A and on B at once (#42.6: A's record counted it until A's next
// heartbeat while B's already did).
func TestMovedPlayerCountsOnce(t *testing.T) {
	servers := startTwo(t)
	a, b := servers[0], servers[1]
	p := connectAs(t, a, "p")
	testrun.WaitFor(t, "A's record counts p", func() bool { return playersIn(t, a, a.ID()) == 1 })
	c, ok := a.Host.Client("p")
	if !ok {
		t.Fatal("p is not connected to A")
	}
	if err := a.Host.Move(context.Background(), c, b.Self(), "test", nil); err != nil {
		t.Fatal(err)
	}
	p.Next("redirect")
	if n := playersIn(t, a, a.ID()); n != 0 {
		t.Fatalf("A's record counts %d players once p was told to go, want 0", n)
	}
}
