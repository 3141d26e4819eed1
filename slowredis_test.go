package muster_test

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// A slow or failing Redis must never stall a room. These tests put a proxy
// (testbin.SlowProxy) between a server and a real redis-server and make
// every reply late, hold requests and replies back with the connections
// open, or let replies through a byte at a time, while players play.

// TestSlowRedisNeverStallsARoom makes Redis slow for a server with players
// in rooms, in turn: every reply 50 ms late (calls still answered in
// time), every reply later than the calls' deadline, replies a byte at a
// time, and a stall (requests and replies held, connections open) that
// lasts until the server is alone, then lets Redis answer again. Through
// all of it the rooms step and apply inputs, and no step worker waits on
// the backplane; during the stall joins, rejoins and queue entries either
// succeed at once or fail at the call's deadline with a clear error; and
// when Redis answers again, every player seated during the stall is
// claimed for the fleet and the queue place of a player who waited
// through it is kept.
func TestSlowRedisNeverStallsARoom(t *testing.T) {
	rd := testbin.StartRedis(t)
	px := testbin.StartSlowProxy(t, rd.Addr)
	a := startSlowServer(t, px.Addr, "a", 100)
	// b is a witness, on Redis directly, that sees what a's claims say;
	// full with a single player, it never gathers a playlist.
	b := startSlowServer(t, rd.Addr, "b", 1)
	for _, s := range []*testServer{a, b} {
		waitUntil(t, s.NodeID()+" sees the fleet", func() bool { return len(s.Fleet().Nodes()) == 2 })
	}
	rooms := seat(t, a, "p1", "p2", "p3", "p4")
	input := 1
	p1States := func() int { n, _, _ := rooms[0][0].state(); return n }

	for _, c := range []struct {
		name string
		slow func()
		held bool // some calls wait on Redis: check that rooms step meanwhile
	}{
		{"replies 50ms late", func() { px.Delay(50 * time.Millisecond) }, false},
		{"replies later than the deadline", func() { px.Delay(2 * slowHeartbeat) }, true},
		{"replies trickle", func() { px.Trickle(20 * time.Millisecond) }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			slowed, states := px.Slowed(), p1States()
			c.slow()
			waitUntil(t, "backplane calls slowed", func() bool { return px.Slowed() >= slowed+3 })
			keepTicking(t, px, c.held, input, rooms...)
			input *= 10
			t.Logf("%d requests or replies slowed; p1 got %d states meanwhile", px.Slowed()-slowed, p1States()-states)
			px.Pass()
			waitUntil(t, "a attached again", func() bool { return a.Fleet().Attached() && len(a.Fleet().Nodes()) == 2 })
		})
	}

	// The stall: a sees Redis accept and say nothing.
	slowed, states := px.Slowed(), p1States()
	px.Stall()
	waitUntil(t, "a's calls held", func() bool { return len(px.Held()) > 0 })
	keepTicking(t, px, true, input, rooms...)
	input *= 10

	// A rejoin during the stall takes its seat back: its ticket is
	// redeemed in a's memory once the call's deadline has passed.
	p2 := rooms[0][1]
	_, _, seatRoom := p2.state()
	p2.close()
	p2 = connect(t, a, "p2", "rejoin")
	if w, _ := p2.await(t, 0, "welcome"); w["room"] != seatRoom {
		t.Fatalf("p2 rejoined during the stall and was welcomed into %v, want its room %s", w["room"], seatRoom)
	}
	rooms[0][1] = p2

	// A lobby needs a code unique in the fleet: while a still sees the
	// others, it cannot be claimed, and the player is told to try again.
	p9 := join(t, a, "p9")[0]
	if !a.Fleet().Alone() {
		p9.send(t, "lobby.create", nil)
		m, _ := p9.await(t, 0, "lobby.error", "lobby.state")
		if m["type"] == "lobby.error" && m["error"] != "lobby: try again later" {
			t.Fatalf("lobby.create during the stall: %v, want lobby.state or lobby.error \"lobby: try again later\"", m)
		}
	}

	// Once a is alone, new players are matched and seated here; a lobby
	// is created under a code a holds until Redis can be told.
	waitUntil(t, "a alone", a.Fleet().Alone)
	p9.send(t, "lobby.create", nil)
	m, _ := p9.await(t, p9.count(), "lobby.state")
	code, _ := m["code"].(string)
	rooms = append(rooms, seat(t, a, "p5", "p6")...)
	// A player who queues alone during the stall keeps its place.
	p7 := join(t, a, "p7")[0]
	p7.queue(t)
	p7.await(t, 0, "queue.waiting")
	keepTicking(t, px, true, input, rooms...)
	input *= 10
	if n := a.Fleet().Nodes(); len(n) != 1 {
		t.Fatalf("a sees %d servers, want itself alone", len(n))
	}

	// Redis answers again: a rejoins the fleet, every player seated here
	// (those seated during the stall too) and the lobby are claimed for
	// a, and the player waiting in the queue is matched with the next.
	t.Logf("stall: %d requests or replies held; p1 got %d states meanwhile", px.Slowed()-slowed, p1States()-states)
	px.Pass()
	waitUntil(t, "a back in the fleet", func() bool { return len(a.Fleet().Nodes()) == 2 && len(b.Fleet().Nodes()) == 2 })
	for _, pair := range rooms {
		for _, p := range pair {
			waitUntil(t, p.id+"'s claim names a", func() bool {
				n, err := b.Fleet().Locate(t.Context(), fleet.KindPlayer, p.id)
				return err == nil && n.ID == "a"
			})
		}
	}
	waitUntil(t, "lobby "+code+"'s claim names a", func() bool {
		n, err := b.Fleet().Locate(t.Context(), fleet.KindLobby, code)
		return err == nil && n.ID == "a"
	})
	p8 := join(t, a, "p8")[0]
	p8.queue(t)
	for _, p := range []*slowPlayer{p7, p8} {
		if m, _ := p.await(t, 0, "room", "queue.error"); m["type"] != "room" {
			t.Fatalf("%s: queued and got %v, want a room", p.id, m)
		}
	}
	keepTicking(t, px, false, input, append(rooms, []*slowPlayer{p7, p8})...)
}

// TestStopWhileRedisStalls stops a server whose Redis has stalled with
// calls in flight, with its context and with a drain: Run returns, and
// the package's goleak check finds no goroutine left behind.
func TestStopWhileRedisStalls(t *testing.T) {
	for _, how := range []string{"context", "drain"} {
		t.Run(how, func(t *testing.T) {
			rd := testbin.StartRedis(t)
			px := testbin.StartSlowProxy(t, rd.Addr)
			a := startSlowServer(t, px.Addr, "a", 100)
			b := startSlowServer(t, rd.Addr, "b", 1)
			waitUntil(t, "a sees the fleet", func() bool { return len(a.Fleet().Nodes()) == 2 })
			pairs := seat(t, a, "p1", "p2")
			waiting := join(t, a, "p3")[0]
			waiting.queue(t)
			waiting.await(t, 0, "queue.waiting")

			px.Stall()
			waitUntil(t, "a's calls held", func() bool { return len(px.Held()) > 0 })
			keepTicking(t, px, false, 1, pairs...)
			stopped := time.Now()
			switch how {
			case "context":
				a.run.cancel()
			case "drain":
				resp, err := http.Post("http://"+a.addr+"/muster/server/drain", "", nil)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					t.Fatalf("drain: %s", resp.Status)
				}
			}
			if err := a.run.wait(t, 15*time.Second); err != nil {
				t.Fatalf("Run: %v", err)
			}
			t.Logf("Run returned %v after the stop, Redis stalled", time.Since(stopped).Round(time.Millisecond))
			_ = b
		})
	}
}

// TestStalledRedisMatchesTogether: the matches one matchmaking round forms
// while Redis stalls are opened together, each claiming its players with
// the call's deadline, not one after another: the last of k pairs waited
// k deadlines for its room, while the queue waited behind them. The
// round's claims are seen waiting on Redis together, in the proxy: no
// deadline of the test's own decides it.
func TestStalledRedisMatchesTogether(t *testing.T) {
	const pairs = 6
	rd := testbin.StartRedis(t)
	px := testbin.StartSlowProxy(t, rd.Addr)
	// A long heartbeat: the calls' deadline is 5 s, the time the others
	// have to queue (in memory, a few milliseconds even on a busy
	// machine) while the first pair's claim waits on Redis.
	a := startSlowServerWith(t, px.Addr, "a", 100, 20*time.Second, quiet)
	waitUntil(t, "a attached", a.Fleet().Attached)
	first := join(t, a, "first-1", "first-2")
	players := join(t, a, names("p", 2*pairs)...)

	px.Stall()
	// The first pair's round opens its room, which waits for its claim
	// until the call's deadline; the others queue meanwhile, so that the
	// next round matches them all.
	for _, p := range first {
		p.queue(t)
	}
	var firstClaim []uint64
	waitUntil(t, "the first pair's claim waits on Redis", func() bool { firstClaim = px.Held(); return len(firstClaim) > 0 })
	for _, p := range players {
		p.queue(t)
	}
	for _, p := range players {
		p.await(t, 0, "queue.waiting")
	}
	for _, p := range first {
		if n, _, _ := p.state(); n > 0 {
			t.Fatalf("%s plays: the first pair's claim gave up before the others had queued; the round that follows it may not match them all", p.id)
		}
	}
	// Once the first pair's claim has given up, the next round opens the
	// others' rooms, their claims waiting on Redis at once.
	heldTogetherBeside(t, px, pairs, "claims of the round's matches", firstClaim)
	px.Pass()
	for _, p := range players {
		if m, _ := p.await(t, 0, "room", "queue.error"); m["type"] != "room" {
			t.Fatalf("%s: queued and got %v, want a room", p.id, m)
		}
	}
}

// TestStalledRedisKeepsArrivingPlaces: a player handed to a server whose
// Redis stalls (its queue place written there by a server whose Redis
// answers) rejoins while the server cannot take the handoff. It is served
// at once, as a newcomer, and gets its place (queue.waiting, with the time
// it waited) once Redis answers again; it used to be left without it, its
// handoff untaken until it expired; and later, taken for nobody by the
// take that gave up, which Redis ran once it answered again.
func TestStalledRedisKeepsArrivingPlaces(t *testing.T) {
	rd := testbin.StartRedis(t)
	px := testbin.StartSlowProxy(t, rd.Addr)
	px.KeepRequests()
	// a gathers the duel playlist (b is full with one player); a's link
	// to Redis is the one that stalls.
	logs := &fleettest.Logs{}
	a := startSlowServerWith(t, px.Addr, "a", 100, 2*time.Second, muster.WithLogger(slog.New(logs)))
	b := startSlowServerWith(t, rd.Addr, "b", 1, 2*time.Second, quiet)
	seesReady(t, b, a)
	p := join(t, b, "p")[0]

	px.Stall()
	p.queue(t)
	if m, _ := p.await(t, 0, "redirect", "queue.error"); m["type"] != "redirect" || m["node"] != "a" {
		t.Fatalf("queued on b and got %v, want a redirect to a", m)
	}
	// The client follows the redirect to a, which cannot reach Redis.
	p = connect(t, a, "p", "rejoin")
	if w, _ := p.await(t, 0, "welcome"); w["room"] != nil {
		t.Fatalf("welcome %v, want no room", w)
	}
	waitUntil(t, "a gave up taking the handoff", func() bool { return logs.Count("locate player and take its handoff") > 0 })
	// The take that gave up still reaches Redis when it answers again,
	// as a stalled Redis that resumes runs what its clients sent before
	// they gave up: it holds the handoff for a while but does not take
	// it for nobody, and a later ask gets it.
	px.Pass()
	if m, _ := p.await(t, 0, "queue.waiting"); m["node"] != "a" {
		t.Errorf("the place came as %v, want it on a", m)
	}
}

// TestStalledRedisHandsOverTogether: the players one matchmaking round
// hands to the server where their playlist gathers are handed together
// while Redis stalls, each move waiting for its handoff's write, not one
// after another (the round, and the queue behind it, waited a deadline
// per player); and none loses its place: once Redis answers they are all
// sent on.
func TestStalledRedisHandsOverTogether(t *testing.T) {
	const waiting = 6
	rd := testbin.StartRedis(t)
	px := testbin.StartSlowProxy(t, rd.Addr)
	// b gathers the duel playlist (a is full with one player); a's link
	// to Redis stalls.
	a := startSlowServerWith(t, px.Addr, "a", 1, 2*time.Second, quiet)
	b := startSlowServerWith(t, rd.Addr, "b", 100, 2*time.Second, quiet)
	seesReady(t, a, b)
	players := join(t, a, names("p", waiting)...)

	px.Stall()
	for _, p := range players {
		p.queue(t)
	}
	heldTogether(t, px, waiting, "hand-overs")
	px.Pass()
	for _, p := range players {
		if m, _ := p.await(t, 0, "redirect", "queue.error"); m["type"] != "redirect" || m["node"] != "b" {
			t.Fatalf("%s: queued on a and got %v, want a redirect to b", p.id, m)
		}
	}
}

// TestStalledRedisMovesLobbyTogether: a draining server whose Redis
// stalls moves a lobby's members to another server together, not one
// after another, a call deadline each (the move writes each member's
// handoff).
func TestStalledRedisMovesLobbyTogether(t *testing.T) {
	const members = 8
	rd := testbin.StartRedis(t)
	px := testbin.StartSlowProxy(t, rd.Addr)
	// Calls' deadlines of 0.5 s, that the lobby's code is claimed (and
	// its members join) on a busy machine before Redis stalls: with
	// 125 ms the claim gave up, and the host got "try again later".
	a := startSlowServerWith(t, px.Addr, "a", 100, 2*time.Second, quiet)
	b := startSlowServerWith(t, rd.Addr, "b", 100, 2*time.Second, quiet)
	seesReady(t, a, b)
	players := join(t, a, names("m", members)...)
	inLobby := func(p *slowPlayer) map[string]any {
		t.Helper()
		m, _ := p.await(t, 0, "lobby.state", "lobby.error")
		if m["type"] != "lobby.state" {
			t.Fatalf("%s: %v, want lobby.state", p.id, m)
		}
		return m
	}
	players[0].send(t, "lobby.create", nil)
	code, _ := inLobby(players[0])["code"].(string)
	for _, p := range players[1:] {
		p.send(t, "lobby.join", map[string]string{"code": code})
		inLobby(p)
	}

	px.Stall()
	drained := make(chan error, 1)
	go func() { drained <- a.Fleet().Drain(context.Background()) }()
	heldTogether(t, px, members, "members' moves")
	px.Pass()
	for _, p := range players {
		if m, _ := p.await(t, 0, "redirect"); m["node"] != "b" || m["reason"] != "drain" {
			t.Errorf("%s: %v, want a drain redirect to b", p.id, m)
		}
	}
	if err := <-drained; err != nil {
		t.Errorf("drain: %v", err)
	}
}

// TestStalledRedisCountsInMemoryAtOnce: once a count (lockout, rate
// limit, ticket) has failed for a stall, the next ones are kept in memory
// at once, until a heartbeat reaches Redis again. A connection used to
// wait out each of its two or three counts' deadlines until the server's
// next heartbeat failed, and every connection until then did the same. A
// long heartbeat (8 s, deadlines of 2 s) keeps that heartbeat out of the
// test.
func TestStalledRedisCountsInMemoryAtOnce(t *testing.T) {
	rd := testbin.StartRedis(t)
	px := testbin.StartSlowProxy(t, rd.Addr)
	a := startSlowServerWith(t, px.Addr, "a", 100, 8*time.Second, quiet)
	before := increments(t, a)
	px.Stall()
	join(t, a, "first")
	if n := increments(t, a) - before; n != 1 {
		t.Errorf("the first player after Redis stalled made %d counts in Redis, want 1", n)
	}
	before = increments(t, a)
	for _, id := range names("next-", 3) {
		join(t, a, id) // one after another
	}
	if n := increments(t, a) - before; n != 0 {
		t.Errorf("the three players after the first made %d counts in Redis, want none", n)
	}
}

// increments returns how many counts s has asked its backplane for, from
// its /metrics.
func increments(t *testing.T, s *testServer) int {
	t.Helper()
	const name = `muster_backplane_request_duration_seconds_count{operation="increment"} `
	for line := range strings.Lines(metricsOf(t, s.addr)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s%s: %v", name, v, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in %s's metrics", name, s.NodeID())
	return 0
}
