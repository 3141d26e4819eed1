package fleet_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
)

// Publish writes the stats set so far at once, not at the next heartbeat.
func TestPublishWritesStatsNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fleettest.Start(t, 1, nil).Servers[0]
		synctest.Wait() // the first heartbeat has written the record
		s.SetStat("players", 7)
		if n, _ := s.Stored(t, s.ID()); n.Stat("players") != 0 {
			t.Fatalf("players %d before Publish, want 0 (no heartbeat since)", n.Stat("players"))
		}
		if err := s.Publish(t.Context()); err != nil {
			t.Fatal(err)
		}
		if n, _ := s.Stored(t, s.ID()); n.Stat("players") != 7 {
			t.Fatalf("players %d after Publish, want 7", n.Stat("players"))
		}
	})
}

// While the last heartbeat missed the backplane, Publish writes nothing
// and says why; once the server has left, it writes its record back
// never.
func TestPublishDetachedAndLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fleettest.Start(t, 1, nil).Servers[0]
		synctest.Wait()
		s.Backplane.Cut(true)
		time.Sleep(fleettest.Heartbeat)
		synctest.Wait()
		if err := s.Publish(t.Context()); !errors.Is(err, fleet.ErrDetached) {
			t.Fatalf("Publish while detached: %v, want ErrDetached", err)
		}
		s.Backplane.Cut(false)
		s.Stop()
		if err := s.Publish(t.Context()); err != nil {
			t.Fatalf("Publish after leaving: %v, want nil", err)
		}
		if _, ok := s.Stored(t, s.ID()); ok {
			t.Fatal("Publish wrote the record of a server that left")
		}
	})
}
