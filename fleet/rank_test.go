package fleet_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
)

func TestRankedIsStable(t *testing.T) {
	var nodes []fleet.Node
	for i := range 10 {
		nodes = append(nodes, fleet.Node{ID: fmt.Sprintf("s%d", i), State: fleet.StateReady, MaxLoad: 1})
	}
	first := fleet.Ranked("duel", nodes, nil)
	if len(first) != 10 {
		t.Fatalf("%d ranked", len(first))
	}
	// Removing a node that is not first leaves the first in place; the
	// order of the others is kept.
	var without []fleet.Node
	for _, n := range nodes {
		if n.ID != first[3].ID {
			without = append(without, n)
		}
	}
	again := fleet.Ranked("duel", without, nil)
	if again[0].ID != first[0].ID || again[3].ID != first[4].ID {
		t.Fatalf("order moved: %v then %v", first, again)
	}
	// keep filters.
	some := fleet.Ranked("duel", nodes, func(n fleet.Node) bool { return n.ID != first[0].ID })
	if len(some) != 9 || some[0].ID != first[1].ID {
		t.Fatalf("filtered order %v", some)
	}
	// Spread: 1000 keys over 10 nodes, no node wins fewer than 50.
	wins := map[string]int{}
	for k := range 1000 {
		wins[fleet.Ranked(fmt.Sprint(k), nodes, nil)[0].ID]++
	}
	for _, n := range nodes {
		if wins[n.ID] < 50 {
			t.Errorf("node %s wins %d of 1000 keys", n.ID, wins[n.ID])
		}
	}
}

func TestLoadPublishedInSteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fleettest.Start(t, 2, func(_ int, cfg *fleet.Config) { cfg.MaxLoad = 100 }) // step 5
		a, b := c.Servers[0], c.Servers[1]
		seen := func(load int) int {
			a.SetLoad(load)
			time.Sleep(2 * hb) // published by a, read by b
			synctest.Wait()
			n, _ := b.Node("s0")
			return n.Load
		}
		for _, tc := range []struct{ set, want int }{
			{3, 0}, {5, 5}, {7, 5}, {10, 10}, {99, 99}, {100, 100}, {97, 97}, {95, 95}, {93, 95},
			// Within a step of max-load, exactly: whether a match fits
			// is decided there.
			{87, 87}, {92, 92}, {96, 96}, {98, 98}, {94, 94}, {0, 0},
		} {
			if got := seen(tc.set); got != tc.want {
				t.Errorf("load %d published as %d, want %d", tc.set, got, tc.want)
			}
		}
		if load, _ := a.Load(); load != 0 || a.Self().Load != 0 {
			t.Errorf("own load %d, Self %d", load, a.Self().Load)
		}
		a.SetLoad(100)
		if a.State() != fleet.StateFull {
			t.Errorf("state at max-load %s, want full", a.State())
		}
	})
}
