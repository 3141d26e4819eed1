package lobby

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/fleet"
)

// A lobby whose members reach two servers (a draining server forwards the
// host by its own id, the lobby's old server sends a late member
// elsewhere) stays one lobby: the member that lands where the lobby did
// not joins it where it landed, instead of opening a second lobby under
// the same code.
func TestLateMemberJoinsWhereItsLobbyLanded(t *testing.T) {
	withCluster(t, clusterOpts{servers: 3}, func(t *testing.T, c *cluster) {
		a, b, x := c.nodes[0], c.nodes[1], c.nodes[2]
		ctx := t.Context()
		code := c.create(a, "host")
		handedOn(a, code)
		d := handoff{Code: code, Role: RoleHost, Host: "host", Members: []string{"host", "m"}, From: a.Srv.ID()}

		c.connect(b, "host")
		b.lm.arrive(ctx, "host", handoffOf(t, d), time.Now(), time.Now())
		d.Role = RoleMember
		c.connect(x, "m")
		x.lm.arrive(ctx, "m", handoffOf(t, d), time.Now(), time.Now())
		if _, ok := x.lm.Lobby(code); ok {
			t.Fatalf("%s re-created lobby %s, which landed on %s: one code, two lobbies", x.Srv.ID(), code, b.Srv.ID())
		}

		time.Sleep(cooldown)
		x.lm.step(ctx, time.Now())
		assertTogether(t, c, b, code, "host", "m")
	})
}

// When two servers re-create one moved lobby at once, the one whose claim
// on the code is taken over sends its members to the other once it finds
// out (the fleet's re-assertion): the lobby does not stay split.
func TestLobbyWhoseCodeWasTakenSendsItsMembers(t *testing.T) {
	withCluster(t, clusterOpts{servers: 3}, func(t *testing.T, c *cluster) {
		a, b, x := c.nodes[0], c.nodes[1], c.nodes[2]
		ctx := t.Context()
		code := c.create(a, "host")
		handedOn(a, code)
		d := handoff{Code: code, Role: RoleMember, Host: "host", Members: []string{"host", "m"}, From: a.Srv.ID()}

		// m lands on x first, which re-creates the lobby and claims it.
		c.connect(x, "m")
		x.lm.arrive(ctx, "m", handoffOf(t, d), time.Now(), time.Now())
		if _, ok := x.lm.Lobby(code); !ok {
			t.Fatalf("%s did not re-create lobby %s for its first member", x.Srv.ID(), code)
		}
		// b had looked before x claimed: it re-creates the lobby too,
		// and its claim is written last.
		d.Role = RoleHost
		c.connect(b, "host")
		b.lm.mu.Lock()
		b.lm.landLocked(nil, "host", d, time.Now(), time.Now())
		b.lm.mu.Unlock()
		if err := b.Srv.Claim(ctx, fleet.KindLobby, code); err != nil {
			t.Fatal(err)
		}

		// x's next re-assertion finds the code taken over.
		time.Sleep(2 * x.Srv.Config().Heartbeat)
		synctest.Wait()
		x.lm.step(ctx, time.Now())
		if _, ok := x.lm.Lobby(code); ok {
			t.Fatalf("%s still holds lobby %s after %s took its code over", x.Srv.ID(), code, b.Srv.ID())
		}
		time.Sleep(cooldown)
		x.lm.step(ctx, time.Now())
		assertTogether(t, c, b, code, "host", "m")
	})
}

// handedOn makes draining server a hand lobby code on, as its drain does:
// the lobby and its members leave a, the code stays claimed by a.
func handedOn(a *node, code string) {
	a.lm.mu.Lock()
	for id, l := range a.lm.players {
		if l.code == code {
			delete(a.lm.players, id)
		}
	}
	delete(a.lm.lobbies, code)
	a.lm.mu.Unlock()
	a.lm.kit.SetDraining(true)
}

// assertTogether checks that lobby code is on n with ids present, and
// that no other server has it.
func assertTogether(t *testing.T, c *cluster, n *node, code string, ids ...string) {
	t.Helper()
	for _, o := range c.nodes {
		if _, ok := o.lm.Lobby(code); ok && o != n {
			t.Errorf("lobby %s is on %s too", code, o.Srv.ID())
		}
	}
	st, ok := n.lm.Lobby(code)
	if !ok {
		t.Fatalf("lobby %s is not on %s", code, n.Srv.ID())
	}
	for _, id := range ids {
		if c.Where(id) != n.Srv.ID() || n.lm.LobbyOf(id) != code || !slices.Contains(st.Members, id) {
			t.Errorf("%s is on %s in lobby %q (%s on %s lists %v), want it there", id, c.Where(id), n.lm.LobbyOf(id), code, n.Srv.ID(), st.Members)
		}
	}
}

// A late member of a lobby whose other members already left with it goes
// straight to where the lobby landed, even when the draining server would
// now pick another target for it (the first is full): one redirect, not
// one to the new target and another on from there. (The draining server
// finds the code claimed by the server it landed on, and gives the lobby
// up as of two that re-created it: its members join there.)
func TestLateMemberFollowsItsLobbyStraight(t *testing.T) {
	withCluster(t, clusterOpts{servers: 3}, func(t *testing.T, c *cluster) {
		a := c.nodes[0]
		ctx := t.Context()
		code := c.create(a, "host")
		time.Sleep(cooldown)
		c.connect(a, "m")
		a.lm.join(ctx, "m", code, time.Now())
		a.lm.kit.SetDraining(true)

		a.lm.step(ctx, time.Now()) // the host's cooldown is over, m's is not
		landed := c.node(c.Where("host"))
		if landed == a || a.lm.LobbyOf("m") != code {
			t.Fatalf("host is on %s, m in lobby %q on a; want the host moved, m still there", c.Where("host"), a.lm.LobbyOf("m"))
		}
		// The server the lobby landed on fills up: a would send m elsewhere.
		_, maxLoad := landed.Srv.Load()
		landed.Srv.SetLoad(maxLoad)
		time.Sleep(2 * a.Srv.Config().Heartbeat)
		synctest.Wait()
		if n, _ := a.Srv.Node(landed.Srv.ID()); n.HasRoom() {
			t.Fatalf("a sees %s with room: %+v", landed.Srv.ID(), n)
		}

		time.Sleep(cooldown)
		for range 2 { // the housekeeping runs every tick
			a.lm.step(ctx, time.Now())
		}
		moves := c.MovesOf("m")
		if len(moves) != 1 || moves[0].To != landed.Srv.ID() {
			t.Fatalf("m was moved %+v, want once, to %s where its lobby is", moves, landed.Srv.ID())
		}
		assertTogether(t, c, landed, code, "host", "m")
	})
}
