package lobby

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/room"
)

// At a drain's end the host sends the players still here away: a
// creation that waits here goes along and is made on the next server; a
// join waiting for its lobby to land is dropped.
func TestReleaseTakesTheCreationAlong(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startCluster(t, clusterOpts{servers: 1})
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
	synctest.Test(t, func(t *testing.T) {
		c := startCluster(t, clusterOpts{servers: 2})
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
