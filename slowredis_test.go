package muster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/fleettest"
	"github.com/muster-gg/muster/internal/testbin"
	"github.com/muster-gg/muster/matchmaking"
	"github.com/muster-gg/muster/room"
)

// A slow or failing Redis must never stall a room. These tests put a proxy
// (testbin.SlowProxy) between a server and a real redis-server and make
// every reply late, hold requests and replies back with the connections
// open, or let replies through a byte at a time, while players play.

// tallySim is the state of a tally room: the sum of its players' inputs.
type tallySim struct{ sum int }

// tally is a game whose rooms add up their players' inputs and send
// {"type":"state","room","step","sum"} to every player after every pass.
type tally struct{}

type tallyRoom = room.Room[*tallySim, int, string]

func (tally) NewSim(room.Info) *tallySim           { return &tallySim{} }
func (tally) Join(_ *tallyRoom, id string) string  { return id }
func (tally) Leave(*tallyRoom, string)             {}
func (tally) Input(r *tallyRoom, _ string, in int) { r.Sim().sum += in }
func (tally) FixedStep(*tallyRoom)                 {}

// AfterSteps implements room.AfterStepper.
func (tally) AfterSteps(r *tallyRoom) {
	r.Broadcast(tallyState{Type: "state", Room: r.ID(), Step: r.Step(), Sum: r.Sim().sum})
}

type tallyState struct {
	Type string `json:"type"`
	Room string `json:"room"`
	Step uint64 `json:"step"`
	Sum  int    `json:"sum"`
}

// The fleet's timing: a heartbeat of 0.5 s makes every backplane call's
// deadline 125 ms (a quarter of it) and a server alone 1.5 s after its
// last heartbeat that reached Redis; rooms step 60 times a second.
const (
	slowHeartbeat = 500 * time.Millisecond
	slowRate      = 60
	slowKey       = "slow-redis-fleet-key-0123456789"
)

// startSlowServer runs server id with Redis at redisAddr, a load budget
// of maxLoad, the duel playlist and lobbies.
func startSlowServer(t *testing.T, redisAddr, id string, maxLoad int) *testServer {
	t.Helper()
	return startSlowServerWith(t, redisAddr, id, maxLoad, slowHeartbeat, quiet)
}

// startSlowServerWith is startSlowServer with another heartbeat and
// logger. Redis's own timeout is the heartbeat, so that every call's
// deadline is the fleet's: a quarter of the heartbeat.
func startSlowServerWith(t *testing.T, redisAddr, id string, maxLoad int, heartbeat time.Duration, logger muster.Option) *testServer {
	t.Helper()
	return startDrainingServer(t, redisAddr, id, maxLoad, heartbeat, 2*time.Second, logger)
}

// startDrainingServer is startSlowServerWith with another drain timeout.
// The server is built with muster.New from a configuration as a game's
// would be.
func startDrainingServer(t *testing.T, redisAddr, id string, maxLoad int, heartbeat, drainTimeout time.Duration, logger muster.Option) *testServer {
	t.Helper()
	l := loopback(t)
	cfg, err := config.Parse(fmt.Appendf(nil, `muster:
  security:
    key: %s
  server:
    capacity:
      max-load: %d
    drain:
      timeout: %s
    fleet:
      redis: %s
      node-id: %s
      heartbeat: %s
      redis-timeout: %s
      internal-address: %s
  room:
    rate: %d
    drain-grace: 100ms
    limits:
      store: backplane
`, slowKey, maxLoad, drainTimeout, redisAddr, id, heartbeat, heartbeat, l.Addr(), slowRate), nil, muster.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return start(t, tally{}, cfg, l, logger, muster.WithPlaylists(matchmaking.Playlist{Name: "duel"}), muster.WithLobbies())
}

// slowPlayer is a player connected to a server over a WebSocket, with a
// goroutine that reads everything it is sent.
type slowPlayer struct {
	id   string
	conn *playConn
	done chan struct{} // closed when the reader has returned

	mu      sync.Mutex
	states  int              // state packets received
	sum     int              // the last state's sum
	room    string           // the last state's room
	packets []map[string]any // every other packet, in order
	err     error            // why reading ended
}

// connect connects player id to s with a new ticket of s's and says
// hello with mode ("new" or "rejoin").
func connect(t *testing.T, s *testServer, id, mode string) *slowPlayer {
	t.Helper()
	p := &slowPlayer{id: id, conn: dialPlayer(t, s.addr, s.Tickets(), id, nil), done: make(chan struct{})}
	go p.read()
	t.Cleanup(p.close)
	p.send(t, "hello", map[string]string{"mode": mode})
	return p
}

func (p *slowPlayer) close() {
	p.conn.CloseNow()
	<-p.done
}

func (p *slowPlayer) read() {
	defer close(p.done)
	for {
		_, data, err := p.conn.Read(context.Background())
		if err != nil {
			p.mu.Lock()
			p.err = err
			p.mu.Unlock()
			return
		}
		var st tallyState
		if json.Unmarshal(data, &st) == nil && st.Type == "state" {
			p.mu.Lock()
			p.states++
			p.sum, p.room = st.Sum, st.Room
			p.mu.Unlock()
			continue
		}
		var m map[string]any
		json.Unmarshal(data, &m)
		p.mu.Lock()
		p.packets = append(p.packets, m)
		p.mu.Unlock()
	}
}

func (p *slowPlayer) send(t *testing.T, typ string, data any) {
	t.Helper()
	if err := p.conn.write(typ, data); err != nil {
		t.Fatalf("%s: write %s: %v", p.id, typ, err)
	}
}

// await waits for the first packet of one of types after the first from
// packets, and returns it and its index.
func (p *slowPlayer) await(t *testing.T, from int, types ...string) (map[string]any, int) {
	t.Helper()
	var got map[string]any
	at := -1
	waitUntil(t, fmt.Sprintf("%s: a packet of %q", p.id, types), func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for i := from; i < len(p.packets); i++ {
			if typ, _ := p.packets[i]["type"].(string); slices.Contains(types, typ) {
				got, at = p.packets[i], i
				return true
			}
		}
		if p.err != nil {
			t.Fatalf("%s: connection ended before a packet of %q: %v; got %v", p.id, types, p.err, p.packets[from:])
		}
		return false
	})
	return got, at
}

// count returns how many packets other than states the player got.
func (p *slowPlayer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.packets)
}

func (p *slowPlayer) state() (states, sum int, room string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.states, p.sum, p.room
}

// stepWaitsOnBackplane returns the stack of a room step worker that is in
// a backplane or Redis call, or "".
func stepWaitsOnBackplane() string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if !strings.Contains(g, "muster/room.(*scheduler).work") {
			continue
		}
		for _, bad := range []string{"go-redis", "muster/backplane", "muster/fleet.(*Fleet).Claim", "muster/fleet.(*Fleet).Release(", "muster/fleet.(*Fleet).Locate",
			"muster/fleet.(*Fleet).Arrive", "muster/fleet.(*Fleet).PutHandoff", "muster/fleet.(*Fleet).TakeHandoff", "muster/fleet.(*Fleet).Increment"} {
			if strings.Contains(g, bad) {
				return g
			}
		}
	}
	return ""
}

// keepTicking checks that the rooms of players keep stepping while the
// proxy is slow: an input sent now is applied (every player of its room
// sees the new sum), every player gets n more states, and no step worker
// is ever found in a backplane call. With held, some player's room also
// sends several states while one request or reply stays held in the
// proxy, i.e. while a backplane call waits on Redis.
func keepTicking(t *testing.T, px *testbin.SlowProxy, held bool, input int, rooms ...[]*slowPlayer) {
	t.Helper()
	check := func() {
		t.Helper()
		if g := stepWaitsOnBackplane(); g != "" {
			t.Fatalf("a room step worker waits on the backplane:\n%s", g)
		}
	}
	for _, players := range rooms {
		_, before, _ := players[0].state()
		players[0].send(t, "input", input)
		for _, p := range players {
			waitUntil(t, fmt.Sprintf("%s sees the input %d applied", p.id, input), func() bool {
				check()
				_, sum, _ := p.state()
				return sum == before+input
			})
		}
	}
	var all []*slowPlayer
	for _, players := range rooms {
		all = append(all, players...)
	}
	start := make([]int, len(all))
	for i, p := range all {
		start[i], _, _ = p.state()
	}
	for i, p := range all {
		waitUntil(t, fmt.Sprintf("%s gets %d more states", p.id, slowRate/2), func() bool {
			check()
			n, _, _ := p.state()
			return n >= start[i]+slowRate/2
		})
	}
	if !held {
		return
	}
	// A backplane call waits on Redis while its request or reply is
	// held: the rooms must send their states meanwhile. A call gives up
	// at its deadline (125 ms), so on a busy machine a try may see the
	// call end first; one try of many must see it.
	p := all[0]
	for try := 0; ; try++ {
		if try == 200 {
			t.Fatalf("%s never got 3 states while a backplane call was held in the proxy", p.id)
		}
		var ids []uint64
		waitUntil(t, "a backplane call held in the proxy", func() bool {
			check()
			ids = px.Held()
			return len(ids) > 0
		})
		n0, _, _ := p.state()
		var n int
		for {
			check()
			n, _, _ = p.state()
			if n >= n0+3 || !slices.ContainsFunc(px.Held(), func(id uint64) bool { return slices.Contains(ids, id) }) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if n >= n0+3 && slices.ContainsFunc(px.Held(), func(id uint64) bool { return slices.Contains(ids, id) }) {
			return
		}
	}
}

// seat connects players ids to s, queues them on the duel playlist in
// pairs, and waits until each has its room's states; it returns the
// pairs.
func seat(t *testing.T, s *testServer, ids ...string) [][]*slowPlayer {
	t.Helper()
	var pairs [][]*slowPlayer
	for i := 0; i+1 < len(ids); i += 2 {
		pair := []*slowPlayer{connect(t, s, ids[i], "new"), connect(t, s, ids[i+1], "new")}
		for _, p := range pair {
			p.await(t, 0, "welcome")
			p.send(t, "queue", map[string]string{"playlist": "duel"})
		}
		for _, p := range pair {
			if m, _ := p.await(t, 0, "room", "queue.error"); m["type"] != "room" {
				t.Fatalf("%s: queued and got %v, want a room", p.id, m)
			}
			waitUntil(t, p.id+" gets its room's state", func() bool { n, _, _ := p.state(); return n > 0 })
		}
		pairs = append(pairs, pair)
	}
	return pairs
}

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
	p9 := connect(t, a, "p9", "new")
	p9.await(t, 0, "welcome")
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
	p7 := connect(t, a, "p7", "new")
	p7.await(t, 0, "welcome")
	p7.send(t, "queue", map[string]string{"playlist": "duel"})
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
	p8 := connect(t, a, "p8", "new")
	p8.await(t, 0, "welcome")
	p8.send(t, "queue", map[string]string{"playlist": "duel"})
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
			waiting := connect(t, a, "p3", "new")
			waiting.await(t, 0, "welcome")
			waiting.send(t, "queue", map[string]string{"playlist": "duel"})
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
// k deadlines for its room, while the queue waited behind them.
func TestStalledRedisMatchesTogether(t *testing.T) {
	const pairs = 6
	logs := &fleettest.Logs{}
	rd := testbin.StartRedis(t)
	px := testbin.StartSlowProxy(t, rd.Addr)
	// A long heartbeat: the calls' deadline is 5 s, so that a busy
	// machine enqueues the players within it; the test lets Redis answer
	// before any call of the second round reaches it.
	a := startSlowServerWith(t, px.Addr, "a", 100, 20*time.Second, muster.WithLogger(slog.New(logs)))
	waitUntil(t, "a attached", a.Fleet().Attached)
	connectAll := func(ids ...string) []*slowPlayer {
		var ps []*slowPlayer
		for _, id := range ids {
			ps = append(ps, connect(t, a, id, "new"))
		}
		for _, p := range ps {
			p.await(t, 0, "welcome")
		}
		return ps
	}
	first := connectAll("first-1", "first-2")
	var ids []string
	for i := range 2 * pairs {
		ids = append(ids, fmt.Sprintf("p%d", i))
	}
	players := connectAll(ids...)
	const claimFailed = "claim players; re-asserted when the backplane returns"

	px.Stall()
	// The first pair's round opens its room and waits for its claim; the
	// others queue meanwhile, so that the next round matches them all.
	for _, p := range first {
		p.send(t, "queue", map[string]string{"playlist": "duel"})
	}
	for _, p := range first {
		waitUntil(t, p.id+" plays", func() bool { n, _, _ := p.state(); return n > 0 })
	}
	for _, p := range players {
		p.send(t, "queue", map[string]string{"playlist": "duel"})
	}
	for _, p := range players {
		p.await(t, 0, "queue.waiting")
	}
	if n := logs.Count(claimFailed); n != 0 {
		t.Fatalf("the first pair's claim gave up before the others had queued (%d failed claims): the machine is too slow for this test", n)
	}
	for _, p := range players {
		waitUntil(t, p.id+" plays", func() bool { n, _, _ := p.state(); return n > 0 })
	}
	// Every pair of the second round plays before any of its claims has
	// given up: the first pair's is the only one.
	if n := logs.Count(claimFailed); n > 1 {
		t.Errorf("%d claims gave up before the %d matches of one round all played: the round opened its rooms one after another, each waiting for its claim", n, pairs)
	}
	px.Pass()
	for _, p := range players {
		p.await(t, 0, "room")
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
	p := connect(t, b, "p", "new")
	p.await(t, 0, "welcome")

	px.Stall()
	p.send(t, "queue", map[string]string{"playlist": "duel"})
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
	var players []*slowPlayer
	for i := range waiting {
		players = append(players, connect(t, a, fmt.Sprintf("p%d", i), "new"))
	}
	for _, p := range players {
		p.await(t, 0, "welcome")
	}

	px.Stall()
	for _, p := range players {
		p.send(t, "queue", map[string]string{"playlist": "duel"})
	}
	heldTogether(t, px, waiting, "hand-overs")
	px.Pass()
	for _, p := range players {
		if m, _ := p.await(t, 0, "redirect", "queue.error"); m["type"] != "redirect" || m["node"] != "b" {
			t.Fatalf("%s: queued on a and got %v, want a redirect to b", p.id, m)
		}
	}
}

// heldTogether waits until the stalled proxy holds n requests at once,
// the n calls of what; it fails the test if that has not happened within
// 15 s.
func heldTogether(t *testing.T, px *testbin.SlowProxy, n int, what string) {
	t.Helper()
	most := 0
	for deadline := time.Now().Add(15 * time.Second); most < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the %d %s never waited on Redis together: at most %d requests held at once", n, what, most)
		}
		most = max(most, len(px.Held()))
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
	a := startSlowServer(t, px.Addr, "a", 100)
	b := startSlowServer(t, rd.Addr, "b", 100)
	seesReady(t, a, b)
	var players []*slowPlayer
	for i := range members {
		p := connect(t, a, fmt.Sprintf("m%d", i), "new")
		p.await(t, 0, "welcome")
		players = append(players, p)
	}
	players[0].send(t, "lobby.create", nil)
	m, _ := players[0].await(t, 0, "lobby.state")
	code, _ := m["code"].(string)
	for _, p := range players[1:] {
		p.send(t, "lobby.join", map[string]string{"code": code})
		p.await(t, 0, "lobby.state")
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
	first := connect(t, a, "first", "new")
	first.await(t, 0, "welcome")
	if n := increments(t, a) - before; n != 1 {
		t.Errorf("the first player after Redis stalled made %d counts in Redis, want 1", n)
	}
	before = increments(t, a)
	for i := range 3 {
		p := connect(t, a, fmt.Sprintf("next-%d", i), "new")
		p.await(t, 0, "welcome")
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
