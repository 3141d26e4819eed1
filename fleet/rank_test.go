package fleet_test

import (
	"fmt"
	"testing"

	"github.com/muster-gg/muster/fleet"
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
