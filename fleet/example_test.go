package fleet_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/fleet"
)

// One server on the in-memory backplane: it runs its heartbeat, claims the
// players it seats, answers its probes, and drains when asked.
func Example() {
	f, err := fleet.New(fleet.Config{NodeID: "game-1", MaxLoad: 100}, memory.New(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()

	f.MarkReady()
	f.SetLoad(2)
	f.SetStat("queue:duel", 1)
	if err := f.Claim(ctx, fleet.KindPlayer, "alice"); err != nil {
		fmt.Println(err)
	}
	where, _ := f.Locate(ctx, fleet.KindPlayer, "alice")
	fmt.Println("alice is on", where.ID, "- alone:", f.Alone())

	probe := httptest.NewRecorder()
	f.Handler().ServeHTTP(probe, httptest.NewRequest(http.MethodGet, fleet.PathReady, nil))
	fmt.Print("ready probe: ", probe.Code, " ", probe.Body.String())

	if err := f.Drain(ctx); err != nil { // no drainers: leaves at once
		fmt.Println(err)
	}
	fmt.Println("state after drain:", f.State(), "- run returned:", <-done)
	// Output:
	// alice is on game-1 - alone: true
	// ready probe: 200 ready
	// state after drain: leaving - run returned: <nil>
}
