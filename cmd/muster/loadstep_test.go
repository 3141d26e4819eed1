package main

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/fleet"
)

// A server's published load moves in steps of max-load/20: a load of 4 on
// a budget of 200 is published as 0. The table does not show that 0 as
// if it were the load: it marks it "~" and says, once, in what steps the
// load is published and where the exact one is.
func TestNodesMarkALoadPublishedInSteps(t *testing.T) {
	t.Parallel()
	fl, err := fleet.New(fleet.Config{NodeID: "s0", MaxLoad: 200}, memory.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	fl.SetLoad(4)
	srv := httptest.NewServer(dashboard.Handler(fl))
	defer srv.Close()
	code, out, errOut := cli(t, "nodes", "--server", srv.URL)
	if code != 0 {
		t.Fatalf("nodes --server: exit %d\n%s%s", code, out, errOut)
	}
	table, note, _ := strings.Cut(out, "\n\n")
	sameTable(t, table, [][]string{
		{"ID", "REGION", "STATE", "LOAD", "ROOMS", "PLAYERS", "QUEUES", "PUBLIC"},
		{"s0", "-", "starting", "~0/200", "-", "-", "-", "-"},
	})
	const want = "~ the load as published, in steps of 10 (muster.server.capacity.load-step, MUSTER__SERVER__CAPACITY__LOAD_STEP): the exact load is less than a step from it, on the server's " + fleet.PathCapacity
	if strings.TrimSpace(note) != want {
		t.Errorf("note %q\nwant %q", strings.TrimSpace(note), want)
	}
}
