package dashboard_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/fleet"
)

// A load published in steps reaches the page with its step, which the
// page marks (loadText), instead of passing for the exact load.
func TestFeedCarriesTheLoadStep(t *testing.T) {
	t.Parallel()
	fl, err := fleet.New(fleet.Config{NodeID: "s0", MaxLoad: 200}, memory.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(dashboard.Handler(fl))
	defer srv.Close()
	for _, tc := range []struct {
		load, wantLoad, wantStep int
	}{
		{load: 4, wantLoad: 0, wantStep: 10},   // within a step of the 0 published
		{load: 12, wantLoad: 12, wantStep: 0},  // a step away: published as it is
		{load: 15, wantLoad: 12, wantStep: 10}, // within a step again
	} {
		fl.SetLoad(tc.load)
		res, err := http.Get(srv.URL + dashboard.PathNodes)
		if err != nil {
			t.Fatal(err)
		}
		var snap dashboard.Snapshot
		err = json.NewDecoder(res.Body).Decode(&snap)
		res.Body.Close()
		if err != nil || len(snap.Nodes) != 1 {
			t.Fatalf("feed: %+v, %v", snap, err)
		}
		if n := snap.Nodes[0]; n.Load != tc.wantLoad || n.LoadStep != tc.wantStep {
			t.Errorf("load %d: feed shows load %d step %d, want load %d step %d", tc.load, n.Load, n.LoadStep, tc.wantLoad, tc.wantStep)
		}
	}
}
