package dashboard_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"

	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/fleet"
)

// A server mounts the dashboard beside its probes; the page at
// /muster/dashboard polls the feed at /muster/dashboard/nodes.
func Example() {
	fl, err := fleet.New(fleet.Config{NodeID: "game-1", Region: "eu-west", MaxLoad: 100}, memory.New(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fl.MarkReady()
	fl.SetLoad(40)
	fl.SetStat("queue:duel", 2)

	h := dashboard.Handler(fl) // with chi: r.Handle("/muster/dashboard", h); r.Handle("/muster/dashboard/*", h)

	page := httptest.NewRecorder()
	h.ServeHTTP(page, httptest.NewRequest("GET", dashboard.Path, nil))
	fmt.Println("page:", page.Code, page.Header().Get("Content-Type"))

	feed := httptest.NewRecorder()
	h.ServeHTTP(feed, httptest.NewRequest("GET", dashboard.PathNodes, nil))
	var snap dashboard.Snapshot
	if err := json.Unmarshal(feed.Body.Bytes(), &snap); err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range snap.Nodes {
		fmt.Printf("%s %s %s %d/%d queue:duel=%d\n", n.ID, n.Region, n.State, n.Load, n.MaxLoad, n.Stats["queue:duel"])
	}
	// Output:
	// page: 200 text/html; charset=utf-8
	// game-1 eu-west ready 40/100 queue:duel=2
}
