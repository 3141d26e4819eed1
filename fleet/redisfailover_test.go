package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testbin"
	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/room"
)

// okBeats records when heartbeats and re-assertions succeed.
type okBeats struct {
	backplane.Backplane
	mark   atomic.Int64 // UnixNano: the calls below count from here
	beatAt atomic.Int64 // UnixNano of the end of the first heartbeat started after mark that succeeded
	reAt   atomic.Int64 // the same for Reassert
}

func (b *okBeats) Heartbeat(ctx context.Context, n backplane.Node, ttl time.Duration) ([]backplane.Node, bool, error) {
	start := time.Now()
	nodes, changed, err := b.Backplane.Heartbeat(ctx, n, ttl)
	if err == nil {
		b.firstAfterMark(&b.beatAt, start)
	}
	return nodes, changed, err
}

func (b *okBeats) Reassert(ctx context.Context, owner string, lease time.Duration, keys ...backplane.Key) ([]backplane.Key, error) {
	start := time.Now()
	lost, err := b.Backplane.Reassert(ctx, owner, lease, keys...)
	if err == nil {
		b.firstAfterMark(&b.reAt, start)
	}
	return lost, err
}

// firstAfterMark sets at to now if the call that started at start is the
// first to succeed after the mark.
func (b *okBeats) firstAfterMark(at *atomic.Int64, start time.Time) {
	if m := b.mark.Load(); m != 0 && start.UnixNano() > m {
		at.CompareAndSwap(0, time.Now().UnixNano())
	}
}

// TestRedisFailoverSentinel kills the master of a Sentinel group under
// three servers with players seated in rooms, and logs how long each
// server was detached, how many claims were lost and how many players were
// dropped (RELIABILITY.md has the figures).
func TestRedisFailoverSentinel(t *testing.T) {
	goredis.SetLogger(quiet{})
	g := testbin.StartSentinelGroup(t)
	s := g.SentinelAddrs()
	q := url.Values{"master_name": {g.MasterName}, "addr": s[1:], "sentinel_password": {g.SentinelPassword}}
	addr := "redis://:" + g.Password + "@" + s[0] + "?" + q.Encode()
	// The master is the one the sentinels name just before the kill: on a
	// busy machine they may have failed over once already.
	var victim, survivor *testbin.Redis
	failover(t, "sentinel", addr, func(ctx context.Context) {
		c := goredis.NewClient(&goredis.Options{Addr: s[0], Password: g.SentinelPassword, DisableIdentity: true})
		defer c.Close()
		master, err := c.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", g.MasterName).StringSlice()
		if err != nil || len(master) != 2 {
			t.Fatalf("the sentinels name no master: %v %v", master, err)
		}
		victim, survivor = g.Master, g.Replica
		if master[0]+":"+master[1] == g.Replica.Addr {
			victim, survivor = g.Replica, g.Master
		}
		raw := goredis.NewClient(&goredis.Options{Addr: victim.Addr, Password: g.Password})
		defer raw.Close()
		if err := raw.Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
			t.Fatal(err)
		}
	}, func() { victim.Stop() }, func(ctx context.Context) bool {
		// Promoted, and named by a sentinel: what a client can find.
		if !isMaster(ctx, survivor.Addr, g.Password) {
			return false
		}
		for _, a := range s {
			c := goredis.NewClient(&goredis.Options{Addr: a, Password: g.SentinelPassword, DisableIdentity: true, MaxRetries: -1})
			master, err := c.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", g.MasterName).StringSlice()
			c.Close()
			if err == nil && len(master) == 2 && master[0]+":"+master[1] == survivor.Addr {
				return true
			}
		}
		return false
	}, func(ctx context.Context) string {
		var b strings.Builder
		for _, a := range s {
			c := goredis.NewClient(&goredis.Options{Addr: a, Password: g.SentinelPassword, DisableIdentity: true, MaxRetries: -1})
			master, err := c.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", g.MasterName).Result()
			info, err2 := c.Do(ctx, "SENTINEL", "MASTER", g.MasterName).Result()
			c.Close()
			fmt.Fprintf(&b, "sentinel %s: master %v (%v); %v (%v)\n", a, master, err, info, err2)
		}
		fmt.Fprintf(&b, "killed %s; %s is a master: %v", victim.Addr, survivor.Addr, isMaster(ctx, survivor.Addr, g.Password))
		return b.String()
	})
}

// isMaster reports whether the Redis at addr says it is a master.
func isMaster(ctx context.Context, addr, password string) bool {
	c := goredis.NewClient(&goredis.Options{Addr: addr, Password: password, DisableIdentity: true, MaxRetries: -1})
	defer c.Close()
	role, err := c.Do(ctx, "ROLE").Slice()
	return err == nil && len(role) > 0 && role[0] == "master"
}

// TestRedisFailoverCluster kills the master of the fleet's hash slot in a
// 3+3 Redis Cluster under three servers with players seated in rooms.
func TestRedisFailoverCluster(t *testing.T) {
	goredis.SetLogger(quiet{})
	rc := testbin.StartRedisCluster(t, testbin.ClusterOptions{})
	addr := "redis://:" + rc.Password + "@" + rc.Seed() + "?cluster=true"
	var victim *testbin.Redis
	failover(t, "cluster", addr, func(ctx context.Context) {
		raw := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{rc.Seed()}, Password: rc.Password})
		defer raw.Close()
		master, err := raw.MasterForKey(ctx, "muster:{failover}:n")
		if err != nil {
			t.Fatal(err)
		}
		if err := master.Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
			t.Fatal(err)
		}
		for _, n := range rc.Nodes {
			if n.Addr == master.Options().Addr {
				victim = n
				return
			}
		}
		t.Fatalf("master %s not found", master.Options().Addr)
	}, func() { victim.Stop() }, func(ctx context.Context) bool {
		masters := 0
		for _, n := range rc.Nodes {
			if n != victim && isMaster(ctx, n.Addr, rc.Password) {
				masters++
			}
		}
		return masters == 3
	}, func(ctx context.Context) string {
		for _, n := range rc.Nodes {
			if n == victim {
				continue
			}
			c := goredis.NewClient(&goredis.Options{Addr: n.Addr, Password: rc.Password, DisableIdentity: true, MaxRetries: -1})
			defer c.Close()
			nodes, err := c.ClusterNodes(ctx).Result()
			return fmt.Sprintf("killed %s; CLUSTER NODES from %s (%v):\n%s", victim.Addr, n.Addr, err, nodes)
		}
		return ""
	})
}

// The failover fleet: three servers, each with rooms of two players
// opened before the writes are replicated, and one more opened
// between the replication and the kill, whose claims the failover may lose.
const (
	failoverRooms = 4
	failoverSeats = 2
	failoverRate  = 10 // steps (and state packets) per second
)

// failoverServer is one server of the failover fleet.
type failoverServer struct {
	*fleet.Fleet // nil on the control host
	name         string
	bp           *okBeats
	host         *room.Host[*hosttest.Sim, int, string]
	url          string
	seats        map[string]string // player → room
}

// failover starts three servers on the Redis at addr and seats players in
// rooms on each, beside a control room host with no fleet. It calls
// replicate (which waits until the replicas have the writes), opens one
// more room on each server, waits for 3 s of calm, calls kill (which kills
// the master) and polls promoted (true once the deployment has switched to
// a replica). Then it checks that no claim was lost (every player's claim,
// looked up from another server, names its server once each has
// re-asserted) and no player dropped (every one still connected, seated
// and held, receiving its room's state after the fleet healed), and logs
// how long each server was detached and the rooms' longest pauses beside
// the control's. describe says what the deployment is doing, for a
// failure.
func failover(t *testing.T, deployment, addr string, replicate func(context.Context), kill func(), promoted func(context.Context) bool, describe func(context.Context) string) {
	// Registered first, so it runs after the clients are closed: a pool
	// that failed to dial the dead master retries once a second, and
	// notices the close only then.
	t.Cleanup(func() {
		testrun.WaitWithin(t, 10*time.Second, "go-redis redials to end", func() bool {
			buf := make([]byte, 1<<20)
			return !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "(*ConnPool).tryDial")
		})
	})
	logger := testrun.Logger(t, slog.LevelWarn)
	var servers []*failoverServer
	for i := range 3 {
		servers = append(servers, startFailoverServer(t, addr, fmt.Sprintf("s%d", i), logger))
	}
	for _, s := range servers {
		testrun.WaitWithin(t, 30*time.Second, s.ID()+" sees three", func() bool { return len(s.Nodes()) == 3 })
	}
	// openRooms opens n rooms on each host of on, and returns their
	// players.
	openRooms := func(on []*failoverServer, n int) (players []*statePlayer) {
		for _, s := range on {
			for range n {
				var ids []string
				for range failoverSeats {
					id := fmt.Sprintf("p-%s-%d", s.name, len(s.seats))
					players = append(players, connectStatePlayer(t, s, id))
					s.seats[id] = ""
					ids = append(ids, id)
				}
				r, err := s.host.OpenRoom(t.Context(), room.Info{Players: ids})
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range ids {
					s.seats[id] = r.ID()
				}
			}
		}
		return players
	}
	players := openRooms(servers, failoverRooms)
	testrun.WaitWithin(t, 30*time.Second, "every player receives its room's state", func() bool {
		return !slices.ContainsFunc(players, func(p *statePlayer) bool { return p.states() == 0 })
	})
	// The control: a room host with no fleet, in the same process, with
	// as many rooms and players as each server, whose pauses in room
	// state are the machine's, not the failover's.
	control := startFailoverServer(t, "", "control", logger)
	controls := openRooms([]*failoverServer{control}, failoverRooms+1)

	replicate(t.Context())
	players = append(players, openRooms(servers, 1)...)
	// A calm stretch to compare the pauses in the rooms' state with: 3 s
	// of state for every player (the late rooms' and the control's too)
	// before the kill.
	calm := time.Now()
	testrun.WaitWithin(t, 60*time.Second, "3 s of room state before the kill", func() bool {
		return !slices.ContainsFunc(slices.Concat(players, controls), func(p *statePlayer) bool { return p.statesSince(calm) < 3*failoverRate })
	})

	killed := time.Now()
	for _, s := range servers {
		s.bp.mark.Store(killed.UnixNano())
	}
	kill()
	var promotedAt atomic.Int64
	pctx, pcancel := context.WithTimeout(t.Context(), 2*time.Minute)
	var pwg sync.WaitGroup
	pwg.Go(func() {
		for pctx.Err() == nil {
			if promoted(pctx) {
				promotedAt.Store(time.Now().UnixNano())
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	defer func() { pcancel(); pwg.Wait() }()
	// The deployment's own failover may take a while on a busy machine
	// (a failed election is retried after a pause): the servers are given
	// 30 s from the promotion, which is given two minutes.
	fail := func(format string, args ...any) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		t.Fatalf(format+"\n%s", append(args, describe(ctx))...)
	}
	if !testrun.Poll(2*time.Minute, func() bool { return promotedAt.Load() != 0 }) {
		fail("no replica promoted within 2 minutes of the kill")
	}
	for _, s := range servers {
		if !testrun.Poll(30*time.Second, func() bool { return s.bp.beatAt.Load() != 0 && len(s.Nodes()) == 3 }) {
			fail("%s not attached again within 30 s of the promotion (%v after the kill); it sees %d servers",
				s.ID(), time.Duration(promotedAt.Load()-killed.UnixNano()).Round(10*time.Millisecond), len(s.Nodes()))
		}
	}
	attached := time.Now()

	// Every claim, looked up from another server, names the server the
	// player is seated on, once each server has re-asserted its claims.
	for _, s := range servers {
		testrun.WaitWithin(t, 30*time.Second, s.ID()+" re-asserted its claims", func() bool { return s.bp.reAt.Load() != 0 })
	}
	wrongClaims := func() (n int) {
		for i, s := range servers {
			other := servers[(i+1)%len(servers)]
			for id := range s.seats {
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				owner, err := other.Locate(ctx, fleet.KindPlayer, id)
				cancel()
				if err != nil || owner.ID != s.ID() {
					n++
				}
			}
		}
		return n
	}
	firstCheck := wrongClaims()
	lost := firstCheck
	deadline := time.Now().Add(30 * time.Second)
	for lost > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		lost = wrongClaims()
	}
	claimsRight := time.Since(killed)

	// Every player is still connected, still seated, and receives its
	// room's state after the fleet healed.
	healed := time.Now()
	deadline = time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && slices.ContainsFunc(players, func(p *statePlayer) bool {
		return p.problem() == "" && !p.stateSince(healed)
	}) {
		time.Sleep(20 * time.Millisecond)
	}
	var dropped []string
	for _, p := range players {
		s := p.host
		switch {
		case p.problem() != "":
			dropped = append(dropped, p.id+": "+p.problem())
		case !p.stateSince(healed):
			dropped = append(dropped, p.id+": no room state since the fleet healed")
		case s.host.RoomOf(p.id) != s.seats[p.id]:
			dropped = append(dropped, fmt.Sprintf("%s: seated in %q, not %q", p.id, s.host.RoomOf(p.id), s.seats[p.id]))
		case !s.Holds(fleet.KindPlayer, p.id):
			dropped = append(dropped, p.id+": its server no longer holds its claim")
		}
	}

	var detached []string
	for _, s := range servers {
		detached = append(detached, fmt.Sprintf("%s %v", s.ID(), time.Duration(s.bp.beatAt.Load()-killed.UnixNano()).Round(10*time.Millisecond)))
	}
	// The longest pause in a player's room state on each host (ten
	// players each) from the kill on, and in the calm stretch before.
	end := time.Now()
	var pauses []string
	var calmGap, calmCtl time.Duration
	for _, s := range slices.Concat(servers, []*failoverServer{control}) {
		var gap time.Duration
		for _, p := range slices.Concat(players, controls) {
			if p.host == s {
				gap = max(gap, p.longestGap(killed, end))
				if s == control {
					calmCtl = max(calmCtl, p.longestGap(calm, killed))
				} else {
					calmGap = max(calmGap, p.longestGap(calm, killed))
				}
			}
		}
		pauses = append(pauses, fmt.Sprintf("%s %v", s.name, gap.Round(10*time.Millisecond)))
	}
	promotion := time.Duration(promotedAt.Load() - killed.UnixNano()).Round(10 * time.Millisecond)
	t.Logf("%s: master killed under 3 servers with %d players in %d rooms: replica promoted after %v; detached %s (all attached after %v); "+
		"claims wrong at the first look after re-assertion: %d, right again %v after the kill (%v after all attached); "+
		"claims lost: %d of %d; players dropped: %d of %d; longest pause in a player's room state from the kill on: %s "+
		"(the control host has no fleet), in the %v before: servers %v, control %v",
		deployment, len(players), len(players)/failoverSeats, promotion, strings.Join(detached, ", "), attached.Sub(killed).Round(10*time.Millisecond),
		firstCheck, claimsRight.Round(10*time.Millisecond), (claimsRight - attached.Sub(killed)).Round(time.Millisecond),
		lost, len(players), len(dropped), len(players), strings.Join(pauses, ", "),
		killed.Sub(calm).Round(10*time.Millisecond), calmGap.Round(10*time.Millisecond), calmCtl.Round(10*time.Millisecond))
	if lost > 0 {
		t.Errorf("%d of %d claims lost in the failover", lost, len(players))
	}
	if len(dropped) > 0 {
		t.Errorf("%d of %d players dropped in the failover:\n%s", len(dropped), len(players), strings.Join(dropped, "\n"))
	}
}

// startFailoverServer starts server id of the failover fleet, with a room
// host serving /play on loopback, until the test ends. With addr "" it
// starts a room host alone, with no fleet.
func startFailoverServer(t *testing.T, addr, id string, logger *slog.Logger) *failoverServer {
	t.Helper()
	hs := httptest.NewUnstartedServer(nil)
	s := &failoverServer{name: id, seats: map[string]string{}}
	var err error
	s.host, err = room.New[*hosttest.Sim, int, string](&hosttest.Game{States: true}, room.Config{
		Secret: "failover", Rate: failoverRate, Limits: room.Limits{Connects: 1 << 20, Open: math.MaxInt},
	}, logger.With("node_id", id))
	if err != nil {
		t.Fatal(err)
	}
	if addr != "" {
		bp, err := redis.Open(redis.Config{URL: addr, Cluster: "failover"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bp.Close() })
		s.bp = &okBeats{Backplane: bp}
		s.Fleet, err = fleet.New(fleet.Config{
			NodeID: id, InternalAddress: hs.Listener.Addr().String(),
			Heartbeat: 500 * time.Millisecond, CallTimeout: 400 * time.Millisecond,
		}, s.bp, logger)
		if err != nil {
			t.Fatal(err)
		}
		s.host.UseServer(s.Fleet)
		s.host.UseFleet(s.Fleet)
		testrun.GoRun(t, s.Run)
	}
	mux := http.NewServeMux()
	mux.Handle("/play", s.host.Handler())
	hs.Config.Handler = mux
	testrun.GoRun(t, s.host.Run)
	hs.Start()
	t.Cleanup(hs.Close)
	<-s.host.Started()
	if s.Fleet != nil {
		s.MarkReady()
	}
	s.url = hs.URL
	return s
}

// statePlayer is a player connected over a WebSocket, with a goroutine
// that reads everything it is sent until the test ends.
type statePlayer struct {
	id, node string
	host     *failoverServer

	mu      sync.Mutex
	at      []time.Time // when each state packet came
	trouble string      // why the player is dropped: a read error or a packet that moves it
}

// connectStatePlayer connects player id to server s and reads its packets
// until the test ends.
func connectStatePlayer(t *testing.T, s *failoverServer, id string) *statePlayer {
	t.Helper()
	hp := playtest.Connect(t, s.url, s.url, s.host.Tickets(), id)
	p := &statePlayer{id: id, node: hp.Node, host: s}
	want := "" // a host without a fleet names no node
	if s.Fleet != nil {
		want = s.name
	}
	if p.node != want {
		t.Fatalf("%s: welcomed by %q on %s", id, p.node, s.name)
	}
	conn := hp.Conn.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.read(conn)
	}()
	t.Cleanup(func() {
		conn.CloseNow()
		<-done
	})
	return p
}

// read reads c until it fails, noting state packets and anything that
// would take the player out of its room.
func (p *statePlayer) read(c *websocket.Conn) {
	for {
		_, data, err := c.Read(context.Background())
		if err != nil {
			p.fail("read: " + err.Error())
			return
		}
		var m struct{ Type string }
		if err := json.Unmarshal(data, &m); err != nil {
			p.fail(fmt.Sprintf("undecodable packet %q", data))
			continue
		}
		switch m.Type {
		case "state":
			p.state(time.Now())
		case "room":
		default:
			p.fail(fmt.Sprintf("sent %s", data))
		}
	}
}

// fail notes the first reason the player is dropped.
func (p *statePlayer) fail(why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.trouble == "" {
		p.trouble = why
	}
}

func (p *statePlayer) problem() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.trouble
}

// state notes a state packet that came at t.
func (p *statePlayer) state(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.at = append(p.at, t)
}

func (p *statePlayer) states() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.at)
}

// statesSince returns the number of state packets that came after t.
func (p *statePlayer) statesSince(t time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	i, _ := slices.BinarySearchFunc(p.at, t, func(a, t time.Time) int { return a.Compare(t) })
	for i < len(p.at) && !p.at[i].After(t) {
		i++
	}
	return len(p.at) - i
}

func (p *statePlayer) stateSince(t time.Time) bool { return p.statesSince(t) > 0 }

// longestGap returns the longest time between two state packets, the
// second of which came after from and not after to.
func (p *statePlayer) longestGap(from, to time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var gap time.Duration
	for i := 1; i < len(p.at); i++ {
		if p.at[i].After(from) && !p.at[i].After(to) {
			gap = max(gap, p.at[i].Sub(p.at[i-1]))
		}
	}
	return gap
}
