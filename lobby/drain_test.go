package lobby

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/room"
)

// A drain hands every open lobby, its members and its host role to
// another server, where the first to arrive re-creates it under the same
// code; a lobby whose match runs moves when the match ends; the running
// rooms finish.
func TestDrainMovesLobbies(t *testing.T) {
	withCluster(t, clusterOpts{servers: 3, server: true, run: true, matchLen: 6 * 60}, func(t *testing.T, c *cluster) {
		g := c.nodes[0]
		ctx := t.Context()
		type want struct {
			host    string
			members []string
		}
		lobbies := map[string]want{}
		for i := range 5 {
			host := fmt.Sprintf("h%d", i)
			code := c.create(g, host)
			members := append([]string{host}, c.guests(g, fmt.Sprintf("m%d", i), 2)...)
			for _, id := range members[1:] {
				g.lm.join(ctx, id, code, time.Now())
			}
			lobbies[code] = want{host, members}
			if i < 2 {
				g.lm.start(ctx, host) // these two are playing
			}
		}
		time.Sleep(cooldown)
		started := time.Now()
		if err := g.Srv.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(started); took >= g.Srv.Config().DrainTimeout {
			t.Errorf("drain took %v: it hit the timeout", took)
		}
		if g.lm.Lobbies() != 0 {
			t.Errorf("%d lobbies left on the drained server", g.lm.Lobbies())
		}
		for code, w := range lobbies {
			var on *node
			for _, n := range c.nodes[1:] {
				if _, ok := n.lm.Lobby(code); ok {
					if on != nil {
						t.Errorf("lobby %s is on %s and %s", code, on.Srv.ID(), n.Srv.ID())
					}
					on = n
				}
			}
			if on == nil {
				t.Errorf("lobby %s was lost", code)
				continue
			}
			st, _ := on.lm.Lobby(code)
			if st.Host != w.host || !reflect.DeepEqual(st.Members, w.members) {
				t.Errorf("lobby %s on %s: %+v, want host %s and %v", code, on.Srv.ID(), st, w.host, w.members)
			}
			for _, id := range w.members {
				if c.Where(id) != on.Srv.ID() {
					t.Errorf("%s of %s is on %s, want %s", id, code, c.Where(id), on.Srv.ID())
				}
			}
			where, err := c.nodes[1].Srv.Locate(ctx, fleet.KindLobby, code)
			if err != nil || where.ID != on.Srv.ID() {
				t.Errorf("%s locates at %q (%v), want %s", code, where.ID, err, on.Srv.ID())
			}
		}
		for _, m := range c.allMoves() {
			role := RoleMember
			if m.player == lobbies[m.ho.Code].host {
				role = RoleHost
			}
			if m.reason != room.ReasonDrain || m.ho.Role != role || m.ho.Host != lobbies[m.ho.Code].host || len(m.ho.Members) != 3 {
				t.Errorf("move %+v, want a drain move as %s", m, role)
			}
		}
		if n := len(c.allMoves()); n != 15 {
			t.Errorf("%d moves, want 15", n)
		}
		ended := g.Game.Ended()
		if ended != 2 || g.Host.Rooms() != 0 {
			t.Errorf("%d rooms finished by the game, %d still run; want both to finish", ended, g.Host.Rooms())
		}
	})
}

// With nowhere to go, a draining server tells its lobbies' members.
func TestDrainNowhereTells(t *testing.T) {
	withCluster(t, clusterOpts{servers: 1, server: true, run: true}, func(t *testing.T, c *cluster) {
		a := c.nodes[0]
		c.create(a, "host")
		if err := a.Srv.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if c.last("host", "server_draining") == nil {
			t.Fatal("the host was not told the server drains")
		}
	})
}

// A lobby created on a draining server is created on another one.
func TestCreateWhileDrainingGoesElsewhere(t *testing.T) {
	withCluster(t, clusterOpts{servers: 2, server: true, run: true, matchLen: 10 * 60}, func(t *testing.T, c *cluster) {
		a, b := c.nodes[0], c.nodes[1]
		if _, err := a.Host.OpenRoom(t.Context(), room.Info{Players: []string{"x"}}); err != nil {
			t.Fatal(err) // keeps a's drain going
		}
		done := make(chan error, 1)
		go func() { done <- a.Srv.Drain(context.Background()) }()
		synctest.Wait()
		c.connect(a, "p")
		a.lm.create(t.Context(), "p", time.Now())
		time.Sleep(cooldown + tick)
		synctest.Wait()
		code := b.lm.LobbyOf("p")
		if code == "" || c.Where("p") != b.Srv.ID() {
			t.Fatalf("p is on %s in lobby %q, want a new lobby on %s", c.Where("p"), code, b.Srv.ID())
		}
		if st, _ := b.lm.Lobby(code); st.Host != "p" {
			t.Fatalf("lobby %+v, want p as host", st)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// A code typed while its lobby's server drains leads to the server the
// lobby moves to, not to the draining one.
func TestJoinFollowsDrainingLobby(t *testing.T) {
	withCluster(t, clusterOpts{servers: 3, server: true, run: true}, func(t *testing.T, c *cluster) {
		a, joiner := c.nodes[0], c.nodes[2]
		code := c.create(a, "host")
		c.connect(joiner, "p")
		time.Sleep(time.Second)
		done := make(chan error, 1)
		go func() { done <- a.Srv.Drain(context.Background()) }()
		synctest.Wait()
		joiner.lm.join(t.Context(), "p", code, time.Now()) // a still holds the code
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		time.Sleep(cooldown)
		synctest.Wait()
		to := c.Where("host")
		if to == a.Srv.ID() || c.Where("p") != to {
			t.Fatalf("host on %s, p on %s; want both on the server the lobby moved to", to, c.Where("p"))
		}
		if st, _ := c.node(to).lm.Lobby(code); st.Host != "host" || !reflect.DeepEqual(st.Members, []string{"host", "p"}) {
			t.Fatalf("lobby on %s: %+v", to, st)
		}
		for _, m := range c.allMoves() {
			if m.player == "p" && m.to == a.Srv.ID() {
				t.Fatal("p was sent to the draining server")
			}
		}
	})
}

// At a drain's end the host sends the players still here away: a
// creation that waits here goes along and is made on the next server; a
// join waiting for its lobby to land is dropped.
func TestReleaseTakesTheCreationAlong(t *testing.T) {
	withCluster(t, clusterOpts{servers: 1}, func(t *testing.T, c *cluster) {
		n := c.nodes[0]
		n.lm.kit.SetDraining(true)
		c.connect(n, "p")
		n.lm.create(t.Context(), "p", time.Now())
		ho, moving := n.lm.Release("p")
		if ho == nil || moving || ho.Kind != HandoffKind {
			t.Fatalf("Release(p) = %+v, %v; want a creation handoff", ho, moving)
		}
		var d handoff
		if err := json.Unmarshal(ho.Data, &d); err != nil || !d.Create || d.Role != RoleHost {
			t.Fatalf("handoff %+v (%v), want a creation with p as host", d, err)
		}
		if ho, moving := n.lm.Release("p"); ho != nil || moving || n.lm.step(t.Context(), time.Now()) != 0 {
			t.Fatalf("Release(p) again = %+v, %v; want the creation gone", ho, moving)
		}

		c.connect(n, "j")
		n.lm.mu.Lock()
		n.lm.waits["j"] = &wait{id: "j", code: "ABCDE"}
		n.lm.mu.Unlock()
		if ho, moving := n.lm.Release("j"); ho != nil || moving || n.lm.step(t.Context(), time.Now()) != 0 {
			t.Fatalf("Release(j) = %+v, %v; want the join dropped", ho, moving)
		}
	})
}

// A code typed on a draining server whose lobby it has just handed on
// (the code is still claimed here until the lobby lands) waits for the
// lobby to land and leads there: it is not told there is no lobby.
func TestJoinOfLobbyHandedOnWaits(t *testing.T) {
	withCluster(t, clusterOpts{servers: 2}, func(t *testing.T, c *cluster) {
		a, b := c.nodes[0], c.nodes[1]
		code := c.create(a, "host")
		// The lobby leaves a; its code stays claimed by a.
		a.lm.mu.Lock()
		delete(a.lm.lobbies, code)
		delete(a.lm.players, "host")
		a.lm.mu.Unlock()
		a.lm.kit.SetDraining(true)
		c.connect(a, "p")
		time.Sleep(cooldown)
		a.lm.join(t.Context(), "p", code, time.Time{})
		if e := c.last("p", TypeError); e != nil {
			t.Fatalf("p was told %v while its lobby was on its way", e)
		}
		// The lobby lands on b.
		c.connect(b, "host")
		b.lm.arrive(t.Context(), "host", handoffOf(t, handoff{Code: code, Role: RoleHost, Host: "host", Members: []string{"host"}, From: a.Srv.ID()}), time.Now(), time.Now())
		a.lm.step(context.Background(), time.Now()) // a still thinks it holds the code
		if c.Where("p") != a.Srv.ID() || c.last("p", TypeError) != nil {
			t.Fatalf("p is on %s, told %v; want it still waiting on a", c.Where("p"), c.last("p", TypeError))
		}
		// a's next heartbeat finds the claim taken over.
		time.Sleep(2 * a.Srv.Config().Heartbeat)
		synctest.Wait()
		if n, err := a.Srv.Locate(t.Context(), fleet.KindLobby, code); err != nil || n.ID != b.Srv.ID() {
			t.Fatalf("code locates on %v (%v), want b", n.ID, err)
		}
		a.lm.step(context.Background(), time.Now())
		if c.Where("p") != b.Srv.ID() || b.lm.LobbyOf("p") != code {
			t.Fatalf("p is on %s in lobby %q, want in %s on %s", c.Where("p"), b.lm.LobbyOf("p"), code, b.Srv.ID())
		}
	})
}

func handoffOf(t *testing.T, d handoff) room.Handoff {
	t.Helper()
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return room.Handoff{Kind: HandoffKind, Data: data}
}
