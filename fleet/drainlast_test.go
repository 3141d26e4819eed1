package fleet_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
)

// lastDrainer records when its parts ran and what the server saw then.
type lastDrainer struct {
	s          *fleettest.Server
	took       time.Duration // its Drain's length
	last       time.Time     // when DrainLast ran
	othersSeen int           // the live servers DrainLast saw
}

func (d *lastDrainer) Drain(ctx context.Context) error {
	time.Sleep(d.took)
	return nil
}

func (d *lastDrainer) DrainLast(ctx context.Context) {
	d.last = time.Now()
	d.othersSeen = len(d.s.Nodes()) - 1
}

// TestDrainLastRunsAfterEveryDrainer: a LastDrainer's last part runs once
// every part's Drain has returned, the slowest included, and before the
// server leaves, while it still sees the others (the room host sends its
// last players there).
func TestDrainLastRunsAfterEveryDrainer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fleettest.Start(t, 0, nil)
		s := c.Add(fleet.Config{NodeID: "a", DrainTimeout: 30 * time.Second, Heartbeat: fleettest.Heartbeat})
		c.Add(fleet.Config{NodeID: "b", Heartbeat: fleettest.Heartbeat})
		synctest.Wait()
		for s.Alone() {
			time.Sleep(fleettest.Heartbeat)
		}
		fast := &lastDrainer{s: s, took: time.Second}
		var slowDone time.Time
		s.AddDrainer(fast)
		s.AddDrainer(fleet.DrainerFunc(func(ctx context.Context) error {
			time.Sleep(5 * time.Second) // the last room ends
			slowDone = time.Now()
			return nil
		}))
		if err := s.Drain(t.Context()); err != nil {
			t.Fatal(err)
		}
		switch {
		case fast.last.IsZero():
			t.Fatal("DrainLast did not run")
		case fast.last.Before(slowDone):
			t.Errorf("DrainLast ran %v before the slowest drainer returned", slowDone.Sub(fast.last))
		case fast.othersSeen != 1:
			t.Errorf("DrainLast saw %d other servers, want b: it must run before the server leaves", fast.othersSeen)
		}
	})
}
