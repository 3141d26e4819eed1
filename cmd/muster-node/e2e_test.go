package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/internal/testbin"
)

// TestFederationEndToEnd is issue 22's acceptance without the game
// servers: home on a real Redis, two nodes whose agents are real
// muster-node processes announcing as the seed shows (photon, turn,
// stun), a real coturn. A player from a node's country gets a room placed
// on that node and a friend abroad joins it there; TURN credentials home
// mints for the node's relay are accepted by coturn; revoking one server
// stops its agent and takes only its node out.
func TestFederationEndToEnd(t *testing.T) {
	goBin := testbin.Need(t, "go")
	srv := testbin.StartRedis(t)
	const turnSecret = "turn-shared-secret-0123456789"
	turn := testbin.StartCoturn(t, turnSecret)

	bin := filepath.Join(t.TempDir(), "muster-node")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build muster-node: %v\n%s", err, out)
	}
	bp, err := redis.Open(redis.Config{URL: srv.Addr, Cluster: "home"})
	if err != nil {
		t.Fatal(err)
	}
	defer bp.Close()
	home, err := federation.NewHome(federation.HomeConfig{
		RegionsCache: -1, SilentAfter: 2 * time.Second, AnnounceEvery: 200 * time.Millisecond,
		Limits: federation.RateLimits{Announce: -1}, // announces every 200ms
	}, bp, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(home.Handler())
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	type agent struct {
		cmd  *exec.Cmd
		out  *syncBuffer
		done chan struct{}
	}
	startNode := func(id, country, services string) *agent {
		t.Helper()
		_, key, err := home.CreateNode(ctx, federation.NodeSpec{ID: id, Country: country})
		if err != nil {
			t.Fatal(err)
		}
		if err := home.Approve(ctx, id); err != nil {
			t.Fatal(err)
		}
		a := &agent{out: &syncBuffer{}, done: make(chan struct{})}
		a.cmd = exec.Command(bin, "-home", hs.URL, "-key-file", filepath.Join(t.TempDir(), "key"), "-announce-every", "200ms")
		a.cmd.Env = append(os.Environ(), "MUSTER_NODE_NODE_KEY="+key, "MUSTER_NODE_SERVICES="+services)
		a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
		if err := a.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { a.cmd.Wait(); close(a.done) }()
		t.Cleanup(func() {
			a.cmd.Process.Kill()
			<-a.done
		})
		return a
	}
	au := startNode("au-sydney", "AU", "photon=127.0.0.2:22002,turn="+turn.Addr+",stun="+turn.Addr)
	startNode("jp-tokyo", "JP", "photon=127.0.0.3:22002")

	placer, err := federation.NewPlacer(federation.PlacerConfig{
		HomeURL: hs.URL, PollEvery: 50 * time.Millisecond, TURNSecret: turnSecret,
		HomeServices: map[string]string{federation.ServiceGame: "home.example:443", federation.ServiceTURN: "home.example:3478"},
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	pctx, stop := context.WithCancel(ctx)
	pdone := make(chan error, 1)
	go func() { pdone <- placer.Run(pctx) }()
	defer func() { stop(); <-pdone }()
	nodes := func() []string {
		var out []string
		for _, r := range placer.Regions() {
			out = append(out, r.Node)
		}
		return out
	}
	waitFor(t, "both nodes in the regions list", func() bool { return slices.Equal(nodes(), []string{"au-sydney", "jp-tokyo"}) })

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
	if err := home.RevokeServer(ctx, info.Servers[0].ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-au.done:
	case <-ctx.Done():
		t.Fatalf("the revoked agent still runs:\n%s", au.out)
	}
	if code := au.cmd.ProcessState.ExitCode(); code != 3 || !strings.Contains(au.out.String(), "refuses this server") {
		t.Fatalf("revoked agent: exit %d\n%s", code, au.out)
	}
	waitFor(t, "only jp-tokyo in the regions list", func() bool { return slices.Equal(nodes(), []string{"jp-tokyo"}) })
	if got := placer.Place(federation.RoomInfo{ID: "room-3"}, "AU"); !got.Home() {
		t.Fatalf("an AU room after the revocation: %+v", got)
	}
	res, err := http.Get(hs.URL + federation.PathRegions)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("regions: %v %v", res, err)
	}
	res.Body.Close()
}
