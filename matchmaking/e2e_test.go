package matchmaking_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/lobby"
	"github.com/muster-gg/muster/matchmaking"
	"github.com/muster-gg/muster/room"
)

// This file runs servers with real WebSockets on loopback, each behind its
// relay, on one fleet with a short heartbeat: the end-to-end path of the
// module-level tests, and the N4 latency benchmark.

var quiet = slog.New(slog.DiscardHandler)

type server struct {
	*hosttest.Server
	mm *matchmaking.Module
	lm *lobby.Module
}

type setup struct {
	servers   int
	playlists []matchmaking.Playlist
	tick      time.Duration // matchmaking.Config.Tick
	matchLen  uint64
	cooldown  time.Duration                                                       // room.Config.MoveCooldown; default the const
	ratings   func(ctx context.Context, player, playlist string) (float64, error) // matchmaking.Config.Ratings
}

// cooldown is the hosts' move cooldown unless setup sets another.
const cooldown = hosttest.Cooldown

// startServers runs the servers, each with a matchmaking and a lobby
// module, until the test ends and waits until each sees all.
func startServers(tb testing.TB, o setup) []*server {
	tb.Helper()
	if len(o.playlists) == 0 {
		o.playlists = []matchmaking.Playlist{{Name: "duel"}}
	}
	out := make([]*server, o.servers)
	servers := hosttest.StartServers(tb, hosttest.Sockets{Servers: o.servers, MatchLen: o.matchLen, Cooldown: o.cooldown, Modules: func(i int) []room.Module {
		mm, err := matchmaking.New(matchmaking.Config{Tick: o.tick, Ratings: o.ratings}, o.playlists...)
		if err != nil {
			tb.Fatal(err)
		}
		lm, err := lobby.New(lobby.Config{Tick: 20 * time.Millisecond})
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = &server{mm: mm, lm: lm}
		return []room.Module{mm, lm}
	}})
	for i, s := range servers {
		out[i].Server = s
	}
	return out
}

// byID returns the server id.
func byID(servers []*server, id string) *server {
	for _, s := range servers {
		if s.ID() == id {
			return s
		}
	}
	return nil
}

// A player queued on a server where duel does not gather is handed over
// with its waited time and redirected through the relay, and matched with
// a player of the gather server.
func TestSocketQueueAcrossRedirect(t *testing.T) {
	servers := startServers(t, setup{servers: 3})
	g := byID(servers, matchmaking.GatherOrder(matchmaking.Playlist{Name: "duel"}, servers[0].Nodes())[0].ID)
	var x *server
	for _, s := range servers {
		if s != g {
			x = s
			break
		}
	}
	a := x.Connect(t, "alice")
	a.Send(matchmaking.MsgQueue, map[string]any{"playlist": "duel", "rating": 1200})
	first := a.Next(matchmaking.TypeWaiting)
	if first["node"] != x.ID() {
		t.Fatalf("alice waits on %v, want %s first", first["node"], x.ID())
	}
	// A fresh connection is moved at once (the cooldown is for players
	// who were moved); the time it waited on x comes along.
	arrived := a.Next(matchmaking.TypeWaiting) // after the redirect
	if arrived["node"] != g.ID() || arrived["waited_ms"].(float64) < first["waited_ms"].(float64) {
		t.Fatalf("alice arrived: %v after %v; want to wait on %s with the time waited on %s", arrived, first, g.ID(), x.ID())
	}
	if len(a.Moves) != 1 || a.Moves[0]["node"] != g.ID() || a.Moves[0]["reason"] != room.ReasonQueue {
		t.Fatalf("alice's redirects %v", a.Moves)
	}

	b := g.Connect(t, "bob")
	b.Send(matchmaking.MsgQueue, map[string]any{"playlist": "duel"})
	ra, rb := a.Next("room"), b.Next("room")
	if ra["room"] != rb["room"] || ra["kind"] != "duel" || g.Host.RoomOf("alice") != ra["room"] {
		t.Fatalf("alice in %v, bob in %v; want one duel room on %s", ra, rb, g.ID())
	}

	// Refusals are packets, not closed connections.
	c := g.Connect(t, "carol")
	c.Send(matchmaking.MsgQueue, map[string]any{"playlist": "nope"})
	if e := c.Next(matchmaking.TypeError); e["error"] != matchmaking.ErrUnknownPlaylist.Error() {
		t.Fatalf("unknown playlist: %v", e)
	}
	c.Send(matchmaking.MsgQueue, map[string]any{"playlist": "duel"})
	c.Next(matchmaking.TypeWaiting)
	c.Send(matchmaking.MsgUnqueue, nil)
	if l := c.Next(matchmaking.TypeLeft); l["playlist"] != "duel" || g.mm.Waiting("duel") != 0 {
		t.Fatalf("unqueue: %v, %d waiting", l, g.mm.Waiting("duel"))
	}
}

// With Config.Ratings the game rates its players: the rating a client
// sends is ignored, so a player cannot claim another's rating to be
// matched with it, and one the game cannot rate is refused.
func TestSocketRatingsFromTheGame(t *testing.T) {
	ratings := map[string]float64{"alice": 1000, "bob": 1020, "mallory": 5000}
	servers := startServers(t, setup{
		servers:   1,
		playlists: []matchmaking.Playlist{{Name: "ranked", Rating: matchmaking.RatingRule{Window: 50}}},
		ratings: func(_ context.Context, player, playlist string) (float64, error) {
			r, ok := ratings[player]
			if !ok || playlist != "ranked" {
				return 0, fmt.Errorf("no rating for %s in %s", player, playlist)
			}
			return r, nil
		},
	})
	s := servers[0]
	connect := func(id string) *playtest.Player { return s.Connect(t, id) }
	m := connect("mallory")
	m.Send(matchmaking.MsgQueue, map[string]any{"playlist": "ranked", "rating": 1000})
	m.Next(matchmaking.TypeWaiting)
	a := connect("alice")
	a.Send(matchmaking.MsgQueue, map[string]any{"playlist": "ranked", "rating": 5000})
	a.Next(matchmaking.TypeWaiting)
	b := connect("bob")
	b.Send(matchmaking.MsgQueue, map[string]any{"playlist": "ranked"})
	ra, rb := a.Next("room"), b.Next("room")
	if ra["room"] != rb["room"] {
		t.Fatalf("alice in %v, bob in %v; want the two rated 1000 and 1020 together", ra, rb)
	}
	if rm := s.Host.RoomOf("mallory"); rm != "" || s.mm.Waiting("ranked") != 1 {
		t.Fatalf("mallory in room %q, %d waiting; want mallory (rated 5000) still waiting alone", rm, s.mm.Waiting("ranked"))
	}
	n := connect("nobody")
	n.Send(matchmaking.MsgQueue, map[string]any{"playlist": "ranked", "rating": 1000})
	if e := n.Next(matchmaking.TypeError); e["error"] != matchmaking.ErrRating.Error() {
		t.Fatalf("a player the game cannot rate: %v, want %q", e, matchmaking.ErrRating)
	}
}

// A Ratings call that never answers is given up: it holds the player's
// messages (and the drain's last part) for a bounded time, and the player
// is told.
func TestSocketRatingsBounded(t *testing.T) {
	defer matchmaking.SetRatingsTimeout(50 * time.Millisecond)()
	ended := make(chan error, 1)
	servers := startServers(t, setup{
		servers:   1,
		playlists: []matchmaking.Playlist{{Name: "ranked", Rating: matchmaking.RatingRule{Window: 50}}},
		ratings: func(ctx context.Context, player, playlist string) (float64, error) {
			<-ctx.Done()
			ended <- ctx.Err()
			return 0, ctx.Err()
		},
	})
	s := servers[0]
	p := s.Connect(t, "alice")
	p.Send(matchmaking.MsgQueue, map[string]any{"playlist": "ranked"})
	if e := p.Next(matchmaking.TypeError); e["error"] != matchmaking.ErrRating.Error() {
		t.Fatalf("got %v, want %q", e, matchmaking.ErrRating)
	}
	if err := <-ended; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ratings' context ended with %v, want its deadline", err)
	}
}

// Drain of the gather server with 50 players waiting and 5 lobbies open:
// all 50 and all 5 arrive elsewhere, with their waited time and host
// roles, and its running rooms finish.
func TestSocketDrainLosesNobody(t *testing.T) {
	servers := startServers(t, setup{
		servers:   3,
		playlists: []matchmaking.Playlist{{Name: "royale", Teams: 2, TeamSize: 32}},
		matchLen:  60, // one second
	})
	g := byID(servers, matchmaking.GatherOrder(matchmaking.Playlist{Name: "royale", Teams: 2, TeamSize: 32}, servers[0].Nodes())[0].ID)
	var lb *server // where the load balancer sends reconnections
	for _, s := range servers {
		if s != g {
			lb = s
			break
		}
	}

	type queued struct {
		p      *playtest.Player
		waited time.Duration // when the drain began
	}
	var waiting []queued
	for i := range 50 {
		p := g.ConnectVia(t, lb.URL, fmt.Sprintf("w%02d", i))
		p.Send(matchmaking.MsgQueue, map[string]any{"playlist": "royale"})
		p.Next(matchmaking.TypeWaiting)
		waiting = append(waiting, queued{p: p})
	}
	type lobbyWant struct {
		code    string
		host    string
		members []*playtest.Player
	}
	var lobbies []lobbyWant
	for i := range 5 {
		var members []*playtest.Player
		for j := range 3 {
			p := g.ConnectVia(t, lb.URL, fmt.Sprintf("l%d-%d", i, j))
			members = append(members, p)
		}
		members[0].Send(lobby.MsgCreate, nil)
		code := members[0].Next(lobby.TypeState)["code"].(string)
		for _, p := range members[1:] {
			p.Send(lobby.MsgJoin, map[string]string{"code": code})
			p.Next(lobby.TypeState)
		}
		lobbies = append(lobbies, lobbyWant{code, members[0].ID, members})
	}
	// One lobby is playing: its room runs on g and finishes during the drain.
	lobbies[0].members[0].Send(lobby.MsgStart, nil)
	for _, p := range lobbies[0].members {
		p.Next("room")
	}
	if g.Host.Rooms() != 1 || g.mm.Waiting("royale") != 50 || g.lm.Lobbies() != 5 {
		t.Fatalf("before the drain: %d rooms, %d waiting, %d lobbies", g.Host.Rooms(), g.mm.Waiting("royale"), g.lm.Lobbies())
	}

	time.Sleep(cooldown) // everybody may be moved
	for i := range waiting {
		waiting[i].waited, _ = g.mm.Waited(waiting[i].p.ID)
	}
	drained := make(chan error, 1)
	go func() { drained <- g.Drain(context.Background()) }()

	var wg sync.WaitGroup
	for _, q := range waiting {
		wg.Go(func() {
			w, err := q.p.Await(matchmaking.TypeWaiting)
			if err != nil {
				t.Errorf("%v (redirects %v; drained %s, reconnecting through %s)", err, q.p.Moves, g.ID(), lb.ID())
				return
			}
			before := q.waited.Milliseconds()
			switch {
			case w["node"] == g.ID() || q.p.Node == g.ID():
				t.Errorf("%s still waits on the draining server", q.p.ID)
			case int64(w["waited_ms"].(float64)) < before:
				t.Errorf("%s arrived with %v ms waited; it had waited %d ms when the drain began", q.p.ID, w["waited_ms"], before)
			case len(q.p.Moves) != 1 || q.p.Moves[0]["reason"] != room.ReasonDrain:
				t.Errorf("%s redirects %v, want one drain", q.p.ID, q.p.Moves)
			}
		})
	}
	for _, l := range lobbies {
		for _, p := range l.members {
			wg.Go(func() {
				for {
					st, err := p.Await(lobby.TypeState)
					if err != nil {
						t.Error(err)
						return
					}
					if st["node"] == g.ID() {
						continue // a state sent before the lobby moved
					}
					if st["code"] != l.code || st["host"] != l.host || len(st["members"].([]any)) != 3 {
						t.Errorf("%s arrived in %v, want lobby %s hosted by %s with 3 members", p.ID, st, l.code, l.host)
					}
					return
				}
			})
		}
	}
	wg.Wait()
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	if g.Host.Rooms() != 0 || g.mm.Waiting("royale") != 0 || g.lm.Lobbies() != 0 {
		t.Fatalf("after the drain: %d rooms, %d waiting, %d lobbies on %s", g.Host.Rooms(), g.mm.Waiting("royale"), g.lm.Lobbies(), g.ID())
	}
	total := 0
	for _, s := range servers {
		if s != g {
			total += s.mm.Waiting("royale")
		}
	}
	if total != 50 {
		for _, q := range waiting {
			var at []string
			for _, s := range servers {
				if w, ok := s.mm.Waited(q.p.ID); ok {
					at = append(at, fmt.Sprintf("%s (%v)", s.ID(), w))
				}
			}
			t.Logf("%s: waits on %v; redirects %v", q.p.ID, at, q.p.Moves)
		}
		t.Fatalf("%d players wait elsewhere after the drain, want 50 (drained %s)", total, g.ID())
	}
	for _, l := range lobbies {
		n, err := lb.Locate(context.Background(), fleet.KindLobby, l.code)
		if err != nil || n.ID == g.ID() {
			t.Fatalf("lobby %s locates at %q (%v)", l.code, n.ID, err)
		}
		if st, ok := byID(servers, n.ID).lm.Lobby(l.code); !ok || st.Host != l.host {
			t.Fatalf("lobby %s on %s: %+v", l.code, n.ID, st)
		}
	}
}

// drainingServer starts three servers and drains the first, which a room
// keeps draining until the test calls the returned end; end waits for
// the drain to be over. It returns the draining server and another.
func drainingServer(t *testing.T) (servers []*server, g, lb *server, end func()) {
	t.Helper()
	servers = startServers(t, setup{servers: 3})
	g, lb = servers[0], servers[1]
	if _, err := g.Host.OpenRoom(t.Context(), room.Info{ID: "last", Players: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	drained := make(chan error, 1)
	go func() { drained <- g.Drain(context.Background()) }()
	testrun.WaitFor(t, "the drain", g.Draining)
	return servers, g, lb, func() {
		t.Helper()
		if r, ok := g.Host.Room("last"); ok {
			r.End("done")
		}
		if err := <-drained; err != nil {
			t.Fatal(err)
		}
	}
}

// A newcomer of a draining server that queues right after its welcome (a
// client sends what its player asked for as soon as it is connected) is
// queued: handed on with its place to a server that stays, matched there
// and seated. A draining server used to send such a newcomer away at
// once, before it read the queue, and with nothing: the queue was lost.
func TestSocketNewcomerQueuesOnDrainingServer(t *testing.T) {
	servers, g, lb, end := drainingServer(t)
	p := g.ConnectVia(t, lb.URL, "newcomer")
	p.Send(matchmaking.MsgQueue, map[string]any{"playlist": "duel"})
	w := p.Next(matchmaking.TypeWaiting)
	for w["node"] == g.ID() { // answered by the draining server, then handed on
		w = p.Next(matchmaking.TypeWaiting)
	}
	if len(p.Moves) == 0 || p.Moves[0]["reason"] != room.ReasonDrain {
		t.Fatalf("newcomer waits on %v after redirects %v; want a drain redirect first", w["node"], p.Moves)
	}
	at := byID(servers, w["node"].(string))
	partner := at.ConnectVia(t, lb.URL, "partner")
	partner.Send(matchmaking.MsgQueue, map[string]any{"playlist": "duel"})
	rn, rp := p.Next("room"), partner.Next("room")
	if rn["room"] != rp["room"] || rn["kind"] != "duel" || p.Node == g.ID() {
		t.Fatalf("newcomer in %v on %s, partner in %v; want one duel room on a server that stays", rn, p.Node, rp)
	}
	end()
}

// A newcomer of a draining server that creates a lobby right after its
// welcome gets its lobby, made on a server that stays.
func TestSocketNewcomerCreatesLobbyOnDrainingServer(t *testing.T) {
	_, g, lb, end := drainingServer(t)
	p := g.ConnectVia(t, lb.URL, "newcomer")
	p.Send(lobby.MsgCreate, nil)
	st := p.Next(lobby.TypeState)
	if st["node"] == g.ID() || st["host"] != p.ID || len(p.Moves) != 1 || p.Moves[0]["reason"] != room.ReasonDrain {
		t.Fatalf("newcomer got %v after redirects %v; want its lobby on a server that stays", st, p.Moves)
	}
	end()
}

// BenchmarkSocketEnqueueToRoom measures N4's enqueue-to-room time across a
// redirect: a player connected to a server where duel does not gather
// sends "queue"; the server hands its place to the gather server and
// redirects it; the player reconnects through the relay of the server it
// was on and is matched there with a partner who waits. The time runs from
// the queue message to the room packet. The move cooldown is 1 ms here:
// with the default 3 s, a player who queues within 3 s of connecting
// waits for it before it is redirected.
func BenchmarkSocketEnqueueToRoom(b *testing.B) {
	for _, tick := range []time.Duration{100 * time.Millisecond, 10 * time.Millisecond} {
		b.Run("tick="+tick.String(), func(b *testing.B) {
			servers := startServers(b, setup{servers: 2, tick: tick, matchLen: 1, cooldown: time.Millisecond})
			g := byID(servers, matchmaking.GatherOrder(matchmaking.Playlist{Name: "duel"}, servers[0].Nodes())[0].ID)
			x := servers[0]
			if x == g {
				x = servers[1]
			}
			var lat []time.Duration
			i := 0
			for b.Loop() {
				i++
				partner := g.Connect(b, fmt.Sprintf("b%d", i))
				partner.Send(matchmaking.MsgQueue, map[string]any{"playlist": "duel"})
				partner.Next(matchmaking.TypeWaiting)
				p := x.Connect(b, fmt.Sprintf("a%d", i))
				// Past the move cooldown, at any phase of the servers' ticks.
				time.Sleep(2*time.Millisecond + rand.N(tick))
				start := time.Now()
				p.Send(matchmaking.MsgQueue, map[string]any{"playlist": "duel"})
				room := p.Next("room")
				lat = append(lat, time.Since(start))
				if len(p.Moves) != 1 || partner.Next("room")["room"] != room["room"] {
					b.Fatalf("moves %v, room %v", p.Moves, room)
				}
				p.Conn.CloseNow()
				partner.Conn.CloseNow()
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
