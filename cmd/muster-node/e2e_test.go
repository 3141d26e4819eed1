package main

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/internal/testkit/fedtest"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// TestFederationEndToEnd is issue 22's acceptance without the game
// servers: home on a real Redis, two nodes whose agents are real
// muster-node processes announcing as the seed shows (photon, turn,
// stun), a real coturn. A player from a node's country gets a room placed
// on that node and a friend abroad joins it there; TURN credentials home
// mints for the node's relay are accepted by coturn; revoking one server
// stops its agent and takes only its node out.
func TestFederationEndToEnd(t *testing.T) {
	home := fedtest.StartHome(t)
	const turnSecret = "turn-shared-secret-0123456789"
	turn := testbin.StartCoturn(t, turnSecret)
	bin := fedtest.BuildMusterNode(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	startNode := func(id, country, services string) *fedtest.Proc {
		t.Helper()
		key := home.ApprovedNode(t, id, country)
		return fedtest.Start(t, "muster-node "+id, bin,
			[]string{"MUSTER_NODE_NODE_KEY=" + key, "MUSTER_NODE_SERVICES=" + services},
			"-home", home.URL, "-key-file", filepath.Join(t.TempDir(), "key"), "-announce-every", fedtest.AnnounceEvery.String())
	}
	au := startNode("au-sydney", "AU", "photon=127.0.0.2:22002,turn="+turn.Addr+",stun="+turn.Addr)
	startNode("jp-tokyo", "JP", "photon=127.0.0.3:22002")

	placer := fedtest.StartPlacer(t, federation.PlacerConfig{
		HomeURL: home.URL, TURNSecret: turnSecret,
		HomeServices: map[string]string{federation.ServiceGame: "home.example:443", federation.ServiceTURN: "home.example:3478"},
	})
	nodes := func() []string {
		var out []string
		for _, r := range placer.Regions() {
			out = append(out, r.Node)
		}
		return out
	}
	fedtest.WaitFor(t, "both nodes in the regions list", func() bool { return slices.Equal(nodes(), []string{"au-sydney", "jp-tokyo"}) })

	// A player from Australia creates a room: it is placed on the AU node;
	// a friend in France joins it there.
	au1 := federation.Placement{Node: "au-sydney", Address: "127.0.0.2:22002"}
	if got := placer.Place(federation.RoomInfo{ID: "room-1"}, "AU"); got != au1 {
		t.Fatalf("an AU player's room: %+v, want %+v", got, au1)
	}
	if got := placer.Place(federation.RoomInfo{ID: "room-1", Members: 1, Placement: au1}, "FR"); got != au1 {
		t.Fatalf("a friend abroad joins at %+v", got)
	}
	if got := placer.Place(federation.RoomInfo{ID: "room-2"}, "JP"); got.Node != "jp-tokyo" {
		t.Fatalf("a JP player's room: %+v", got)
	}
	// The AU node's relay, with credentials home minted, works.
	ice := placer.ICEServers("AU", "player-1")
	if len(ice) != 2 || !slices.Equal(ice[1].URLs, []string{"turn:" + turn.Addr}) {
		t.Fatalf("ICE servers %+v", ice)
	}
	if err := turn.Allocate(ctx, t, ice[1].Username, ice[1].Credential); err != nil {
		t.Fatalf("coturn refused home's credentials: %v\n%s", err, turn.Log())
	}

	// Revoking the AU server stops its agent (status 3) and takes only AU
	// out.
	info, err := home.Node(ctx, "au-sydney")
	if err != nil || len(info.Servers) != 1 {
		t.Fatalf("au-sydney %+v %v", info, err)
	}
	home.RevokeAgent(t, info.Servers[0].ID, au)
	fedtest.WaitFor(t, "only jp-tokyo in the regions list", func() bool { return slices.Equal(nodes(), []string{"jp-tokyo"}) })
	if got := placer.Place(federation.RoomInfo{ID: "room-3"}, "AU"); !got.Home() {
		t.Fatalf("an AU room after the revocation: %+v", got)
	}
	res, err := http.Get(home.URL + federation.PathRegions)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("regions: %v %v", res, err)
	}
	res.Body.Close()
}
