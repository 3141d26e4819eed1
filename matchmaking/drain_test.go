package matchmaking

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/room"
)

// A draining gather server hands its 50 waiting players, with their
// waited time, to the next server, and lets its running rooms finish.
func TestDrainHandsQueueOver(t *testing.T) {
	withCluster(t, clusterOpts{
		servers: 3, run: true, server: true, matchLen: 8 * 60, // rooms end after 8 s
		playlists: []Playlist{{Name: "duel"}, {Name: "royale", Teams: 2, TeamSize: 32}},
	}, func(t *testing.T, c *cluster) {
		g := c.gather("royale")[0]
		if c.gather("duel")[0] != g {
			// Open the running rooms on g directly.
			for i := range 3 {
				if _, err := g.Host.OpenRoom(t.Context(), room.Info{Kind: "duel", Players: []string{fmt.Sprintf("r%da", i), fmt.Sprintf("r%db", i)}}); err != nil {
					t.Fatal(err)
				}
			}
		} else {
			for i := range 6 {
				c.queue(g, fmt.Sprintf("r%d", i), "duel", nil)
			}
		}
		for i := range 50 {
			c.queue(g, fmt.Sprintf("w%02d", i), "royale", nil)
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if g.Host.Rooms() != 3 || g.mm.Waiting("royale") != 50 {
			t.Fatalf("before the drain: %d rooms, %d waiting on %s", g.Host.Rooms(), g.mm.Waiting("royale"), g.Srv.ID())
		}
		waitedAtDrain := map[string]time.Duration{}
		for i := range 50 {
			id := fmt.Sprintf("w%02d", i)
			waitedAtDrain[id], _ = g.mm.Waited(id)
		}

		start := time.Now()
		if err := g.Srv.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if took >= g.Srv.Config().DrainTimeout {
			t.Errorf("drain took %v: it hit the timeout", took)
		}
		arrived := map[string]arrival{}
		c.mu.Lock()
		for _, a := range c.arrivals {
			arrived[a.player] = a
		}
		c.mu.Unlock()
		for i := range 50 {
			id := fmt.Sprintf("w%02d", i)
			a, ok := arrived[id]
			switch {
			case !ok:
				t.Errorf("%s was lost", id)
			case a.node == g.Srv.ID():
				t.Errorf("%s arrived on the draining server", id)
			case a.waited < waitedAtDrain[id] || a.waited > waitedAtDrain[id]+cooldown:
				// Moved within the cooldown of the drain's start at the latest.
				t.Errorf("%s arrived with %v waited, had %v at the drain", id, a.waited, waitedAtDrain[id])
			}
			if m := c.movesOf(id); len(m) != 1 || m[0].reason != room.ReasonDrain || m[0].waited != a.waited {
				t.Errorf("%s moves %+v, want one drain move carrying %v", id, m, a.waited)
			}
		}
		ended := g.Game.Ended()
		if ended != 3 || g.Host.Rooms() != 0 {
			t.Errorf("%d rooms ended by the game, %d still run; want the 3 to finish", ended, g.Host.Rooms())
		}
		if g.Srv.State() != fleet.StateLeaving {
			t.Errorf("state after the drain: %s", g.Srv.State())
		}
	})
}

// A draining server's moves are made maxOpening at a time, and each
// writes its handoff, a backplane call that may take its deadline. A
// player whose move waits behind others waits here meanwhile: its
// handoff carries the time it waited until its own move, not until the
// round was planned (Q3).
func TestDrainCountsTheWaitBehindOtherMoves(t *testing.T) {
	withCluster(t, clusterOpts{
		servers: 2, run: true, server: true,
		playlists: []Playlist{{Name: "royale", Teams: 2, TeamSize: 32}},
	}, func(t *testing.T, c *cluster) {
		g := c.gather("royale")[0]
		const players = 2*maxOpening + 1 // three batches of moves, no match
		queued := map[string]time.Time{}
		for i := range players {
			id := fmt.Sprintf("w%02d", i)
			queued[id] = time.Now()
			c.queue(g, id, "royale", nil)
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(cooldown) // every player movable in the drain's first round
		synctest.Wait()
		var mu sync.Mutex
		movedAt := map[string]time.Time{}
		g.MoveHook = func(id string) {
			mu.Lock()
			movedAt[id] = time.Now()
			mu.Unlock()
			time.Sleep(time.Second) // the handoff's write, slow
		}
		if err := g.Srv.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for id, at := range queued {
			m := c.movesOf(id)
			if len(m) != 1 || movedAt[id].IsZero() {
				t.Errorf("%s: moves %+v, want one", id, m)
				continue
			}
			if want := movedAt[id].Sub(at); m[0].waited != want {
				t.Errorf("%s: moved %v after it queued, carrying %v waited", id, want, m[0].waited)
			}
		}
	})
}

// With nowhere to go, a draining server's waiting players are told, not
// dropped.
func TestDrainNowhereTells(t *testing.T) {
	withCluster(t, clusterOpts{
		servers: 1, server: true, run: true,
		fleet: func(_ int, cfg *fleet.Config) { cfg.DrainTimeout = 10 * time.Second },
	}, func(t *testing.T, c *cluster) {
		n := c.nodes[0]
		c.queue(n, "p1", "duel", nil)
		if err := n.Srv.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		told := 0
		for _, p := range c.Sent("p1") {
			if m, ok := p.(map[string]string); ok && m["type"] == "server_draining" {
				told++
			}
		}
		if told != 1 || c.Where("p1") != n.Srv.ID() {
			t.Fatalf("p1 told %d times, at %s; want told once, not moved", told, c.Where("p1"))
		}
	})
}

// At a drain's end the host sends the players still here away: one who
// waits takes its place along (the drain's handoff, its waited time); one
// being moved is left to the module; one not queued takes nothing.
func TestReleaseHandsThePlaceOn(t *testing.T) {
	withCluster(t, clusterOpts{servers: 1}, func(t *testing.T, c *cluster) {
		n := c.nodes[0]
		c.queue(n, "p1", "duel", ptr(1700.0))
		c.queue(n, "p2", "duel", nil)
		time.Sleep(1500 * time.Millisecond)

		ho, mv := n.mm.Release("p1")
		if ho == nil || mv || ho.Kind != HandoffKind {
			t.Fatalf("Release(p1) = %+v, %v; want its queue handoff", ho, mv)
		}
		var d handoff
		if err := json.Unmarshal(ho.Data, &d); err != nil {
			t.Fatal(err)
		}
		want := handoff{Playlist: "duel", Waited: int64(1500 * time.Millisecond), Rating: 1700, From: n.Srv.ID(), Drain: true}
		if d != want {
			t.Fatalf("handoff %+v, want %+v", d, want)
		}
		if _, ok := n.mm.Waited("p1"); ok || n.mm.Waiting("duel") != 1 {
			t.Fatalf("p1 still queued here after its release (%d waiting)", n.mm.Waiting("duel"))
		}
		if ho, mv := n.mm.Release("p1"); ho != nil || mv {
			t.Fatalf("Release(p1) again = %+v, %v; want nothing", ho, mv)
		}

		n.mm.mu.Lock()
		n.mm.players["p2"].state = moving
		n.mm.mu.Unlock()
		if ho, mv := n.mm.Release("p2"); ho != nil || !mv {
			t.Fatalf("Release(p2) while it is moved = %+v, %v; want it left to the module", ho, mv)
		}
	})
}
