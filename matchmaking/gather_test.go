package matchmaking

import (
	"fmt"
	"maps"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
	"github.com/muster-gg/muster/room"
)

const tick = 100 * time.Millisecond // Config.Tick's default
const cooldown = 3 * time.Second    // room.Config.MoveCooldown's default

// 30 players enqueued for duel, ten on each of three servers: within one
// heartbeat plus the cooldown they all wait on one server and are matched
// there.
func TestQueuesGather(t *testing.T) {
	withCluster(t, clusterOpts{servers: 3, run: true}, func(t *testing.T, c *cluster) {
		g := c.gather("duel")[0]
		for i := range 30 {
			c.queue(c.nodes[i%3], fmt.Sprintf("p%02d", i), "duel", nil)
		}
		time.Sleep(fleettest.Heartbeat + cooldown + tick)
		synctest.Wait()

		for _, n := range c.nodes {
			want := 0
			if n == g {
				want = 15
			}
			if got := n.Host.Rooms(); got != want {
				t.Errorf("%s runs %d rooms, want %d", n.Srv.ID(), got, want)
			}
		}
		for i := range 30 {
			id := fmt.Sprintf("p%02d", i)
			if g.Host.RoomOf(id) == "" {
				t.Errorf("%s is not seated on the gather server %s (at %s)", id, g.Srv.ID(), c.Where(id))
			}
			moves := c.movesOf(id)
			switch {
			case c.nodes[i%3] == g && len(moves) != 0:
				t.Errorf("%s queued on the gather server was moved: %v", id, moves)
			case c.nodes[i%3] != g && (len(moves) != 1 || moves[0].to != g.Srv.ID() || moves[0].reason != room.ReasonQueue):
				t.Errorf("%s moves %+v, want one queue move to %s", id, moves, g.Srv.ID())
			}
		}
		// The rooms carry the playlist and teams.
		if n := len(c.allMoves()); n != 20 {
			t.Errorf("%d moves, want 20", n)
		}
	})
}

// A player who waited 4.2 s on A has waited 4.2 s on arrival at B, and
// is told so.
func TestWaitedTimeMoves(t *testing.T) {
	withCluster(t, clusterOpts{
		servers:   2,
		playlists: []Playlist{{Name: "duel", Rating: RatingRule{Window: 10, Widen: 100}}},
	}, func(t *testing.T, c *cluster) {
		order := c.gather("duel")
		b, a := order[0], order[1]
		c.queue(a, "p1", "duel", ptr(1500.0))
		time.Sleep(4200 * time.Millisecond)
		a.mm.step(t.Context(), time.Now())

		if got := c.Where("p1"); got != b.Srv.ID() {
			t.Fatalf("p1 is on %s, want the gather server %s", got, b.Srv.ID())
		}
		waited, ok := b.mm.Waited("p1")
		if !ok || waited != 4200*time.Millisecond {
			t.Fatalf("p1 has waited %v on arrival at %s (queued %v), want 4.2s", waited, b.Srv.ID(), ok)
		}
		last := c.Sent("p1")[len(c.Sent("p1"))-1]
		if w, ok := last.(WaitingPacket); !ok || w.WaitedMS != 4200 || w.Node != b.Srv.ID() {
			t.Fatalf("p1 was last told %#v, want a WaitingPacket with 4200 ms on %s", last, b.Srv.ID())
		}
		// The rating and the widened window moved too: a player 400
		// points away, just arrived, is within p1's window (10 + 4.2*100).
		c.queue(b, "p2", "duel", ptr(1900.0))
		b.mm.step(t.Context(), time.Now())
		if b.Host.RoomOf("p1") == "" || b.Host.RoomOf("p1") != b.Host.RoomOf("p2") {
			t.Fatal("p1 and p2 were not matched with p1's widened window")
		}
	})
}

// The gather server at max-load sends its queue, and new players flow, to
// the next server in order; with no server with room, players wait where
// they are.
func TestOverflow(t *testing.T) {
	const maxLoad = 10
	withCluster(t, clusterOpts{
		servers: 3, run: true,
		playlists: []Playlist{{Name: "squad", Teams: 2, TeamSize: 4}},
		fleet:     func(_ int, cfg *fleet.Config) { cfg.MaxLoad = maxLoad },
	}, func(t *testing.T, c *cluster) {
		order := c.gather("squad")
		g, next, last := order[0], order[1], order[2]

		c.queue(g, "early", "squad", nil) // waits on the gather server
		time.Sleep(cooldown)
		synctest.Wait()
		if c.Where("early") != g.Srv.ID() || g.mm.Waiting("squad") != 1 {
			t.Fatalf("early is on %s, want to wait on the gather server %s", c.Where("early"), g.Srv.ID())
		}

		g.Srv.SetLoad(maxLoad)
		time.Sleep(2 * fleettest.Heartbeat) // published, then read by all
		synctest.Wait()
		for _, n := range c.nodes {
			if got := GatherOrder(c.playlist("squad"), n.Srv.Nodes()); len(got) != 2 || got[0].ID != next.Srv.ID() {
				t.Fatalf("%s's order with %s full: %v, want %s first", n.Srv.ID(), g.Srv.ID(), got, next.Srv.ID())
			}
		}
		// The full server sent its waiting player on.
		if m := c.movesOf("early"); len(m) != 1 || m[0].to != next.Srv.ID() {
			t.Fatalf("early's moves %+v, want one to %s", m, next.Srv.ID())
		}
		// New players anywhere flow to the next server.
		c.queue(g, "new-g", "squad", nil)
		c.queue(last, "new-last", "squad", nil)
		time.Sleep(cooldown + tick)
		synctest.Wait()
		for _, id := range []string{"new-g", "new-last"} {
			if got := c.Where(id); got != next.Srv.ID() {
				t.Errorf("%s is on %s, want %s", id, got, next.Srv.ID())
			}
		}
		if got := next.mm.Waiting("squad"); got != 3 {
			t.Errorf("%d wait on %s, want 3", got, next.Srv.ID())
		}

		// Every server full: nobody moves, everyone waits where they are.
		for _, n := range c.nodes {
			n.Srv.SetLoad(maxLoad)
		}
		time.Sleep(2 * fleettest.Heartbeat)
		synctest.Wait()
		moved := len(c.allMoves())
		for i, n := range c.nodes {
			for j := range 3 {
				c.queue(n, fmt.Sprintf("full-%d-%d", i, j), "squad", nil)
			}
		}
		time.Sleep(3 * fleettest.Heartbeat)
		synctest.Wait()
		if got := len(c.allMoves()); got != moved {
			t.Errorf("%d moves with no server with room", got-moved)
		}
		for i, n := range c.nodes {
			for j := range 3 {
				if id := fmt.Sprintf("full-%d-%d", i, j); c.Where(id) != n.Srv.ID() {
					t.Errorf("%s moved to %s with no server with room", id, c.Where(id))
				}
			}
			if n.Host.Rooms() != 0 {
				t.Errorf("%s opened rooms above its max-load", n.Srv.ID())
			}
			// Q5: the queue lengths are published with the heartbeat.
			want := int64(n.mm.Waiting("squad"))
			for _, seen := range c.nodes[0].Srv.Nodes() {
				if seen.ID == n.Srv.ID() && seen.Stat("queue:squad") != want {
					t.Errorf("%s publishes queue:squad=%d, want %d", n.Srv.ID(), seen.Stat("queue:squad"), want)
				}
			}
		}
	})
}

// One heartbeat of disagreeing views bounces nobody: the gather server
// fills and sends its player to the next server, whose view still names
// the full one; that server keeps it, and keeps its own players too,
// instead of sending them to the full server to be sent back.
func TestStaleViewBouncesNobody(t *testing.T) {
	const maxLoad = 10
	withCluster(t, clusterOpts{
		servers:   3,
		playlists: []Playlist{{Name: "squad", Teams: 2, TeamSize: 4}},
		fleet:     func(_ int, cfg *fleet.Config) { cfg.MaxLoad = maxLoad },
	}, func(t *testing.T, c *cluster) {
		order := c.gather("squad")
		g, next := order[0], order[1]
		ctx := t.Context()
		stepAll := func() { // g first: its handoff is on its way before the others step
			g.mm.step(ctx, time.Now())
			for _, n := range c.nodes {
				if n != g {
					n.mm.step(ctx, time.Now())
				}
			}
		}
		c.queue(g, "on-g", "squad", nil)
		c.queue(next, "on-next", "squad", nil)
		time.Sleep(cooldown) // both could be moved now
		g.mm.step(ctx, time.Now())
		if len(c.allMoves()) != 0 {
			t.Fatalf("moves %+v before the views changed", c.allMoves())
		}

		// g fills between two heartbeats: g knows at once, the others a
		// heartbeat later.
		g.Srv.SetLoad(maxLoad)
		if n, _ := next.Srv.Node(g.Srv.ID()); !n.HasRoom() {
			t.Fatal("test setup: next's view is not stale")
		}
		stepAll() // g hands on-g to next; next, whose view names g, keeps both
		if n, _ := next.Srv.Node(g.Srv.ID()); !n.HasRoom() {
			t.Fatal("test setup: next's view is no longer stale")
		}
		for range 3 * int(fleettest.Heartbeat/tick) {
			time.Sleep(tick)
			stepAll()
		}

		for _, id := range []string{"on-g", "on-next"} {
			if got := c.Where(id); got != next.Srv.ID() {
				t.Errorf("%s is on %s, want %s", id, got, next.Srv.ID())
			}
		}
		if m := c.movesOf("on-next"); len(m) != 0 {
			t.Errorf("on-next, queued on the server the others were sending to, was moved: %+v", m)
		}
		if m := c.movesOf("on-g"); len(m) != 1 || m[0].to != next.Srv.ID() {
			t.Errorf("on-g moves %+v, want one to %s", m, next.Srv.ID())
		}
	})
}

// A player whose match was formed and whose room is being opened is never
// moved, even when its server stops gathering meanwhile.
func TestPendingJoinNeverMoved(t *testing.T) {
	const maxLoad = 10
	withCluster(t, clusterOpts{
		servers: 2,
		fleet:   func(_ int, cfg *fleet.Config) { cfg.MaxLoad = maxLoad },
	}, func(t *testing.T, c *cluster) {
		order := c.gather("duel")
		g, next := order[0], order[1]
		release := make(chan struct{})
		opening := make(chan struct{}, 1)
		g.OpenHook = func(room.Info) {
			opening <- struct{}{}
			<-release
		}
		c.queue(g, "p1", "duel", nil)
		c.queue(g, "p2", "duel", nil)
		time.Sleep(cooldown)
		ctx := t.Context()
		stepped := make(chan struct{})
		go func() {
			defer close(stepped)
			g.mm.step(ctx, time.Now())
		}()
		<-opening // p1 and p2 are matched; their room is being opened

		g.Srv.SetLoad(maxLoad) // g stops gathering
		c.queue(g, "p3", "duel", nil)
		time.Sleep(cooldown)
		g.mm.step(ctx, time.Now()) // hands over what waits: p3 only
		if c.Where("p3") != next.Srv.ID() {
			t.Errorf("p3 is on %s, want %s", c.Where("p3"), next.Srv.ID())
		}
		for _, id := range []string{"p1", "p2"} {
			if m := c.movesOf(id); len(m) != 0 {
				t.Errorf("%s with a pending join was moved: %+v", id, m)
			}
		}
		close(release)
		<-stepped
		if g.Host.RoomOf("p1") == "" || g.Host.RoomOf("p1") != g.Host.RoomOf("p2") {
			t.Fatal("p1 and p2 did not join their room")
		}
	})
}

// An injected backplane error on the handoff write leaves the player in
// place, with its place; it moves once the backplane works again.
func TestHandoffWriteFailureKeepsPlace(t *testing.T) {
	withCluster(t, clusterOpts{servers: 2}, func(t *testing.T, c *cluster) {
		order := c.gather("duel")
		g, a := order[0], order[1]
		c.queue(a, "p1", "duel", nil)
		time.Sleep(cooldown + time.Second)
		a.Srv.Backplane.Fail("PutHandoff", fleettest.ErrInjected)
		a.mm.step(t.Context(), time.Now())

		if c.Where("p1") != a.Srv.ID() || len(c.movesOf("p1")) != 0 {
			t.Fatalf("p1 moved although its handoff could not be written: at %s, moves %+v", c.Where("p1"), c.movesOf("p1"))
		}
		for _, p := range c.Sent("p1") {
			if m, ok := p.(map[string]string); ok && m["type"] == "redirect" {
				t.Fatal("p1 was redirected without a handoff")
			}
		}
		if w, ok := a.mm.Waited("p1"); !ok || w != cooldown+time.Second {
			t.Fatalf("p1 waits %v (%v) on %s, want its place with 4s waited", w, ok, a.Srv.ID())
		}

		a.Srv.Backplane.Fail("PutHandoff", nil)
		time.Sleep(time.Second)
		a.mm.step(t.Context(), time.Now())
		if c.Where("p1") != g.Srv.ID() {
			t.Fatalf("p1 is on %s after the backplane recovered, want %s", c.Where("p1"), g.Srv.ID())
		}
		if w, _ := g.mm.Waited("p1"); w != 5*time.Second {
			t.Fatalf("p1 has waited %v on arrival, want 5s", w)
		}
	})
}

// Alone, every decision is local: no handoff, no redirect.
func TestAloneIsLocal(t *testing.T) {
	withCluster(t, clusterOpts{servers: 1, run: true}, func(t *testing.T, c *cluster) {
		n := c.nodes[0]
		for i := range 4 {
			c.queue(n, fmt.Sprintf("p%d", i), "duel", nil)
		}
		time.Sleep(tick)
		synctest.Wait()
		if n.Host.Rooms() != 2 || len(c.allMoves()) != 0 {
			t.Fatalf("alone: %d rooms, %d moves; want 2 rooms, no move", n.Host.Rooms(), len(c.allMoves()))
		}
	})
}

// A player handed over is not sent back to the server it came from while
// the receiver's view of it may be stale (three heartbeats), and never to
// a server that was draining, even once Hold is over.
func TestNotSentBack(t *testing.T) {
	withCluster(t, clusterOpts{
		servers:   2,
		playlists: []Playlist{{Name: "duel", Teams: 3}},
	}, func(t *testing.T, c *cluster) { // never full
		order := c.gather("duel")
		g, other := order[0], order[1]
		other.mm.cfg.Hold = time.Millisecond // only the guard under test holds
		ctx := t.Context()

		c.queue(g, "drained", "duel", nil)
		time.Sleep(cooldown)
		g.mm.mu.Lock()
		g.mm.kit.SetDraining(true) // as if g drained; the others' views still show it ready
		g.mm.mu.Unlock()
		g.mm.step(ctx, time.Now())
		g.mm.mu.Lock()
		g.mm.kit.SetDraining(false)
		g.mm.mu.Unlock()
		if c.Where("drained") != other.Srv.ID() {
			t.Fatalf("drained is on %s, want %s", c.Where("drained"), other.Srv.ID())
		}
		// An ordinary hand-over from g: other's view names g, and g's
		// handoff says it does not drain.
		c.connect(other, "gathered")
		arrived := time.Now()
		other.mm.arrive("gathered", room.Handoff{Kind: HandoffKind, Data: []byte(`{"playlist":"duel","from":"` + g.Srv.ID() + `"}`)}, arrived, arrived)
		guard := fleet.MissedHeartbeats * fleettest.Heartbeat
		for time.Since(arrived) < guard+tick {
			if time.Since(arrived) < guard && c.Where("gathered") != other.Srv.ID() {
				t.Fatalf("gathered sent back after %v, within the guard", time.Since(arrived))
			}
			other.mm.step(ctx, time.Now())
			time.Sleep(tick)
		}
		if m := c.movesOf("drained"); len(m) != 1 {
			t.Errorf("drained moves %+v: sent back to the draining server", m)
		}
		m := c.movesOf("gathered")
		if len(m) != 1 || m[0].to != g.Srv.ID() {
			t.Fatalf("gathered moves %+v, want one back to %s after the guard", m, g.Srv.ID())
		}
	})
}

// seatWatch records, for each node of c, the most seats its rooms held
// at any moment and everyone seated there, checking each room as it is
// opened: a node's load only grows when a room opens.
type seatWatch struct {
	mu     sync.Mutex
	peak   map[string]int
	seated map[string]string // player → node it was seated on
}

func watchSeats(c *cluster) *seatWatch {
	w := &seatWatch{peak: map[string]int{}, seated: map[string]string{}}
	for _, n := range c.nodes {
		n.OpenHook = func(info room.Info) {
			load := n.Host.Load() + len(info.Players)
			w.mu.Lock()
			defer w.mu.Unlock()
			w.peak[n.Srv.ID()] = max(w.peak[n.Srv.ID()], load)
			for _, id := range info.Players {
				w.seated[id] = n.Srv.ID()
			}
		}
	}
	return w
}

func (w *seatWatch) get(node string) (peak int, seated map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak[node], maps.Clone(w.seated)
}

// The gather server fills within one round, well before its published
// load (sent every second, read at the next heartbeat) shows it full: 30
// players queued on a gather server with room for 20 seat 20 there, and
// the other 10 overflow, with the time they waited, to the next server in
// order and are matched there. Nobody is lost, and no server ever seats
// more than its max-load. With room for fewer players than a match (21
// for duels), the gather server never shows full, and only the overflow
// moves the rest.
func TestGatherServerSeatsUpToMaxLoad(t *testing.T) {
	cases := []struct {
		name    string
		maxLoad int
		pl      Playlist
	}{
		{"duel", 20, Playlist{Name: "duel"}},
		{"rated duel", 20, Playlist{Name: "duel", Rating: RatingRule{Window: 10, Widen: 100}}},
		{"room for less than a match", 21, Playlist{Name: "duel"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			withCluster(t, clusterOpts{
				servers: 3, server: true, run: true,
				playlists: []Playlist{tc.pl},
				fleet:     func(_ int, cfg *fleet.Config) { cfg.MaxLoad = tc.maxLoad },
			}, func(t *testing.T, c *cluster) {
				w := watchSeats(c)
				order := c.gather("duel")
				g, next, last := order[0], order[1], order[2]
				queued := time.Now()
				for i := range 30 {
					c.queue(g, fmt.Sprintf("p%02d", i), "duel", ptr(1500.0))
				}
				time.Sleep(tick)
				synctest.Wait()
				if got, want := g.Host.Load(), 20; got != want {
					t.Fatalf("%s seats %d after the first round, want %d (max-load %d)", g.Srv.ID(), got, want, tc.maxLoad)
				}
				if got := g.mm.Waiting("duel"); got != 10 {
					t.Fatalf("%d wait on %s after the first round, want 10", got, g.Srv.ID())
				}

				time.Sleep(cooldown + tick) // movable now
				synctest.Wait()
				for n, want := range map[*node]int{g: 10, next: 5, last: 0} {
					if got := n.Host.Rooms(); got != want {
						t.Errorf("%s runs %d rooms, want %d", n.Srv.ID(), got, want)
					}
					if peak, _ := w.get(n.Srv.ID()); peak > tc.maxLoad {
						t.Errorf("%s seated %d players at once, max-load %d", n.Srv.ID(), peak, tc.maxLoad)
					}
				}
				arrivals := map[string]arrival{}
				c.mu.Lock()
				for _, a := range c.arrivals {
					arrivals[a.player] = a
				}
				c.mu.Unlock()
				_, seated := w.get("")
				onG := 0
				for i := range 30 {
					id := fmt.Sprintf("p%02d", i)
					moves := c.movesOf(id)
					switch seated[id] {
					case g.Srv.ID():
						onG++
						if len(moves) != 0 || g.Host.RoomOf(id) == "" {
							t.Errorf("%s matched on %s: moves %+v, room %q", id, g.Srv.ID(), moves, g.Host.RoomOf(id))
						}
					case next.Srv.ID():
						if len(moves) != 1 || moves[0].from != g.Srv.ID() || moves[0].to != next.Srv.ID() || moves[0].reason != room.ReasonQueue {
							t.Errorf("%s moves %+v, want one queue move from %s to %s", id, moves, g.Srv.ID(), next.Srv.ID())
							continue
						}
						// Q3: the waited time moved with it.
						a := arrivals[id]
						if a.waited != moves[0].waited || a.waited < cooldown || a.waited > time.Since(queued) {
							t.Errorf("%s arrived with %v waited, handed with %v, moved %v after it queued", id, a.waited, moves[0].waited, time.Since(queued))
						}
						if next.Host.RoomOf(id) == "" {
							t.Errorf("%s was moved to %s but not seated there", id, next.Srv.ID())
						}
					default:
						t.Errorf("%s was not matched: seated on %q, at %s", id, seated[id], c.Where(id))
					}
				}
				if onG != 20 {
					t.Errorf("%d matched on %s, want 20", onG, g.Srv.ID())
				}
			})
		})
	}
}

// A server alone at max-load seats nobody beyond it: the players it has
// no room for wait, not told to leave, and are matched as soon as rooms
// end.
func TestAloneAtMaxLoadWaits(t *testing.T) {
	const maxLoad = 20
	withCluster(t, clusterOpts{
		servers: 1, server: true, run: true, matchLen: 10 * 60, // rooms end after 10 s
		fleet: func(_ int, cfg *fleet.Config) { cfg.MaxLoad = maxLoad },
	}, func(t *testing.T, c *cluster) {
		w := watchSeats(c)
		n := c.nodes[0]
		for i := range 30 {
			c.queue(n, fmt.Sprintf("p%02d", i), "duel", nil)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n.Host.Rooms() != 10 || n.mm.Waiting("duel") != 10 {
			t.Fatalf("alone at max-load: %d rooms, %d waiting; want 10 rooms, 10 waiting", n.Host.Rooms(), n.mm.Waiting("duel"))
		}
		_, seated := w.get("")
		for i := range 30 {
			id := fmt.Sprintf("p%02d", i)
			if seated[id] != "" {
				continue
			}
			if _, ok := n.mm.Waited(id); !ok {
				t.Errorf("%s is neither seated nor waiting", id)
			}
			for _, p := range c.Sent(id) {
				if _, ok := p.(WaitingPacket); !ok {
					t.Errorf("%s, waiting for room, was sent %#v", id, p)
				}
			}
		}

		time.Sleep(10 * time.Second) // the first rooms ended
		synctest.Wait()
		_, seated = w.get("")
		if len(seated) != 30 || n.mm.Waiting("duel") != 0 || n.Host.Rooms() != 5 {
			t.Errorf("after the first rooms ended: %d seated once, %d waiting, %d rooms; want 30, 0, 5", len(seated), n.mm.Waiting("duel"), n.Host.Rooms())
		}
		if peak, _ := w.get(n.Srv.ID()); peak > maxLoad {
			t.Errorf("seated %d players at once, max-load %d", peak, maxLoad)
		}
		if len(c.allMoves()) != 0 {
			t.Errorf("moves %+v alone", c.allMoves())
		}
	})
}

// A gather server left with room for fewer players than a match (max-load
// 21, 20 seated, for duels of 2) drops out of every server's gather order
// for the playlist: players queued anywhere are handed at most once, to
// the next server, and matched there, and the one left over waits there;
// nobody is sent to the full server to be overflowed on, nor bounces.
func TestNoGatherWithoutRoomForAMatch(t *testing.T) {
	const maxLoad = 21
	withCluster(t, clusterOpts{
		servers: 3, server: true, run: true,
		fleet: func(_ int, cfg *fleet.Config) { cfg.MaxLoad = maxLoad },
	}, func(t *testing.T, c *cluster) {
		order := c.gather("duel")
		g, next, last := order[0], order[1], order[2]
		for i := range 20 {
			c.queue(g, fmt.Sprintf("f%02d", i), "duel", nil)
		}
		time.Sleep(tick)
		synctest.Wait()
		if got := g.Host.Load(); got != 20 {
			t.Fatalf("%s seats %d, want 20", g.Srv.ID(), got)
		}
		time.Sleep(3 * fleettest.Heartbeat) // the load is published, then read by all
		synctest.Wait()
		for _, n := range c.nodes {
			view := n.Srv.Nodes()
			got := gatherOrder("duel", 2, view, "")
			if len(got) != 2 || got[0].ID != next.Srv.ID() {
				t.Errorf("%s's duel order with %s at 20 of %d: %v, want %s first, %s left out", n.Srv.ID(), g.Srv.ID(), maxLoad, got, next.Srv.ID(), g.Srv.ID())
			}
		}

		// 9 players, 3 queued on each server: 4 matches and one left over.
		from := map[string]*node{}
		for i := range 9 {
			id := fmt.Sprintf("q%d", i)
			from[id] = c.nodes[i%3]
			c.queue(from[id], id, "duel", nil)
		}
		time.Sleep(30 * time.Second) // well past the cooldown, Hold and the bounce guard
		synctest.Wait()
		waiting := 0
		for i := range 9 {
			id := fmt.Sprintf("q%d", i)
			moves := c.movesOf(id)
			switch {
			case from[id] == next && len(moves) != 0:
				t.Errorf("%s, queued on the gather server %s, was moved: %+v", id, next.Srv.ID(), moves)
			case from[id] != next && (len(moves) != 1 || moves[0].to != next.Srv.ID() || moves[0].reason != room.ReasonQueue):
				t.Errorf("%s, queued on %s, moves %d times: %+v; want one queue move to %s", id, from[id].Srv.ID(), len(moves), moves, next.Srv.ID())
			}
			if c.Where(id) != next.Srv.ID() {
				t.Errorf("%s is at %s, want %s", id, c.Where(id), next.Srv.ID())
				continue
			}
			if next.Host.RoomOf(id) == "" {
				if _, ok := next.mm.Waited(id); !ok {
					t.Errorf("%s is neither seated nor waiting on %s", id, next.Srv.ID())
				}
				waiting++
			}
		}
		if waiting != 1 || next.Host.Rooms() != 4 || g.Host.Load() != 20 || last.Host.Rooms() != 0 {
			t.Errorf("%d waiting and %d rooms on %s, load %d on %s, %d rooms on %s; want 1, 4, 20, 0",
				waiting, next.Host.Rooms(), next.Srv.ID(), g.Host.Load(), g.Srv.ID(), last.Host.Rooms(), last.Srv.ID())
		}
	})
}
