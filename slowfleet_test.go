package muster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testbin"
	"github.com/muster-gg/muster/matchmaking"
	"github.com/muster-gg/muster/room"
)

// The fleet of the slow-Redis tests (slowredis_test.go): servers of the
// tally game, built with muster.New from a configuration as a game's
// would be, on a real redis-server (through a testbin.SlowProxy for the
// server whose Redis is slowed), and players that read everything they
// are sent; and the checks that rooms keep stepping.

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
	conn *playtest.Conn
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
	p := &slowPlayer{id: id, conn: playtest.DialPlayer(t, "http://"+s.addr, s.Tickets(), id, ""), done: make(chan struct{})}
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
	if err := p.conn.WritePacket(typ, data); err != nil {
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
		pair := join(t, s, ids[i], ids[i+1])
		for _, p := range pair {
			p.queue(t)
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

// join connects new players ids to s, then waits for their welcomes.
func join(t *testing.T, s *testServer, ids ...string) []*slowPlayer {
	t.Helper()
	var ps []*slowPlayer
	for _, id := range ids {
		ps = append(ps, connect(t, s, id, "new"))
	}
	for _, p := range ps {
		p.await(t, 0, "welcome")
	}
	return ps
}

// names returns n player ids: prefix0, prefix1, ...
func names(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return ids
}

// queue queues p on the duel playlist.
func (p *slowPlayer) queue(t *testing.T) {
	t.Helper()
	p.send(t, "queue", map[string]string{"playlist": "duel"})
}

// heldTogether waits until the stalled proxy holds n requests at once,
// the n calls of what; it fails the test if that has not happened within
// 15 s.
func heldTogether(t *testing.T, px *testbin.SlowProxy, n int, what string) {
	t.Helper()
	heldTogetherBeside(t, px, n, what, nil)
}

// heldTogetherBeside is heldTogether counting none of before, chunks held
// earlier for other calls.
func heldTogetherBeside(t *testing.T, px *testbin.SlowProxy, n int, what string, before []uint64) {
	t.Helper()
	most := 0
	for deadline := time.Now().Add(15 * time.Second); most < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the %d %s never waited on Redis together: at most %d requests held at once", n, what, most)
		}
		now := 0
		for _, id := range px.Held() {
			if !slices.Contains(before, id) {
				now++
			}
		}
		most = max(most, now)
	}
}
