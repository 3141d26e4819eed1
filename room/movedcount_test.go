package room_test

import (
	"context"
	"testing"

	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// A player redirected from A to B counts once in the fleet: A's record
// stops counting it before the player is told to go, so no server reads
// it on A and on B at once (#42.6: A's record counted it until A's next
// heartbeat while B's already did).
func TestMovedPlayerCountsOnce(t *testing.T) {
	servers := startTwo(t)
	a, b := servers[0], servers[1]
	p := connectAs(t, a, "p")
	testrun.WaitFor(t, "A's record counts p", func() bool { return stat(t, a, "players") == 1 })
	c, ok := a.Host.Client("p")
	if !ok {
		t.Fatal("p is not connected to A")
	}
	if err := a.Host.Move(context.Background(), c, b.Self(), "test", nil); err != nil {
		t.Fatal(err)
	}
	p.Next("redirect")
	if n := stat(t, a, "players"); n != 0 {
		t.Fatalf("A's record counts %d players once p was told to go, want 0", n)
	}
}

// stat reads stat name of s's record as the store holds it now.
func stat(t *testing.T, s *hosttest.Server, name string) int64 {
	t.Helper()
	n, ok := s.Stored(t, s.ID())
	if !ok {
		t.Fatalf("no record of %s", s.ID())
	}
	return n.Stat(name)
}
