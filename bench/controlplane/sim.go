package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/fleet"
)

// The workload of one simulated server, in player events. Every tick a
// random 0 or 1 room of roomSize players opens (its players are seated:
// claimed) and 0 or 1 room ends (its players, the longest seated, leave:
// released), so that the server's load (its seated players) wanders as a
// busy server's does; one player arrives (the first of those sent to it
// with a handoff, or else a player whose seat is on another server, who
// rejoins through it); and every other tick it sends a player to another
// server with a handoff. Per server per second: 2 arrivals (1 sent with a
// handoff, 1 rejoining), 1 room opened and 1 ended (2 players seated, 2
// leaving), 1 player sent away, and 0.5 heartbeats.
//
// The calls those events make are the design's:
//
//   - per player, as the library made them before arrivals and rooms
//     were batched: an arrival is Locate then TakeHandoff, and a room's
//     players are claimed and released one call each. 9 round trips per
//     server per second.
//   - batched, as the library makes them now: an arrival is one Arrive
//     call (fleet.Fleet.Arrive, as room.Host calls it), and a room's
//     players are claimed in one call and released in one. 5 round trips
//     per server per second.
//
// Without ops (-ops=false) the load wanders just the same, and only
// heartbeats reach Redis.
//
// Queues gather on one server per playlist (SPEC Q2): servers 0 and 1
// gather "duel" and "squad", and their queue lengths change every tick;
// every other server publishes both queues as 0.
const (
	workloadTick = 500 * time.Millisecond
	handoffEvery = 2  // ticks per handoff put
	roomSize     = 2  // players per room, as in a duel
	startPlayers = 20 // players on a server when it starts
	minPlayers   = 10
	maxPlayers   = 60
	inboxSize    = 8 // players sent to a server who have not arrived yet

	// loadStep is the change of load that the proposed fleet rule waits
	// for before it publishes a new load: 5% of the default max-load.
	loadStep = 10
)

// poolSize is the connection pool of each server's Redis client: room for
// one server's few concurrent calls.
const poolSize = 4

// pipelinePoolSize is the pool go-redis keeps for pipelines (heartbeats,
// arrivals), apart from the other.
const pipelinePoolSize = 2

type op int

const (
	opClaim op = iota
	opRelease
	opLocate
	opPut
	opTake
	opArrive
	numOps
)

// counts is a snapshot of what the simulated servers did, cumulative.
type counts struct {
	heartbeats, heartbeatErrs int64
	heartbeatRTs              int64 // round trips made by the Heartbeat calls counted
	roundTrips                int64 // every round trip of every client
	recordBytes               int64 // sum of the published records' sizes
	changes                   int64 // heartbeats that published a changed record
	ok, miss, failed          [numOps]int64
}

func (c counts) sub(d counts) counts {
	c.heartbeats -= d.heartbeats
	c.heartbeatErrs -= d.heartbeatErrs
	c.heartbeatRTs -= d.heartbeatRTs
	c.roundTrips -= d.roundTrips
	c.recordBytes -= d.recordBytes
	c.changes -= d.changes
	for i := range numOps {
		c.ok[i] -= d.ok[i]
		c.miss[i] -= d.miss[i]
		c.failed[i] -= d.failed[i]
	}
	return c
}

// meter gathers what the simulated servers did. It is safe for concurrent
// use.
type meter struct {
	measuring atomic.Bool // record heartbeat latencies

	heartbeats, heartbeatErrs, heartbeatRTs, roundTrips, recordBytes, changes atomic.Int64
	ok, miss, failed                                                          [numOps]atomic.Int64

	mu       sync.Mutex
	lat      []time.Duration
	firstErr error
}

func (m *meter) snapshot() counts {
	c := counts{
		heartbeats:    m.heartbeats.Load(),
		heartbeatErrs: m.heartbeatErrs.Load(),
		heartbeatRTs:  m.heartbeatRTs.Load(),
		roundTrips:    m.roundTrips.Load(),
		recordBytes:   m.recordBytes.Load(),
		changes:       m.changes.Load(),
	}
	for i := range numOps {
		c.ok[i], c.miss[i], c.failed[i] = m.ok[i].Load(), m.miss[i].Load(), m.failed[i].Load()
	}
	return c
}

// latencies returns the heartbeat latencies recorded while measuring,
// sorted.
func (m *meter) latencies() []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(slices.Values(m.lat))
}

// err returns the first error any server met.
func (m *meter) err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.firstErr
}

func (m *meter) fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.firstErr == nil {
		m.firstErr = err
	}
}

// done counts one operation: ErrNotFound (a player who left, a handoff
// already expired or not yet written) is a miss, not an error.
func (m *meter) done(o op, err error) {
	switch {
	case err == nil:
		m.ok[o].Add(1)
	case errors.Is(err, fleet.ErrNotFound):
		m.miss[o].Add(1)
	default:
		m.failed[o].Add(1)
		m.fail(err)
	}
}

// heartbeatCall is the context key under which a Heartbeat call carries
// the counter of its round trips, for the hook.
type heartbeatCall struct{}

// timed is the backplane of one simulated server: the design under test,
// with each Heartbeat timed, its round trips counted, and its record
// compared with the one before. A Fleet makes one Heartbeat at a time.
type timed struct {
	backplane.Backplane
	m    *meter
	last []byte
}

func (b *timed) Heartbeat(ctx context.Context, node backplane.Node, ttl time.Duration) ([]backplane.Node, bool, error) {
	var rts atomic.Int64
	start := time.Now()
	nodes, created, err := b.Backplane.Heartbeat(context.WithValue(ctx, heartbeatCall{}, &rts), node, ttl)
	d := time.Since(start)
	b.m.heartbeats.Add(1)
	b.m.heartbeatRTs.Add(rts.Load())
	b.m.recordBytes.Add(int64(len(node.Data)))
	if !bytes.Equal(b.last, node.Data) {
		b.m.changes.Add(1)
		b.last = node.Data
	}
	if err != nil {
		b.m.heartbeatErrs.Add(1)
		b.m.fail(fmt.Errorf("heartbeat: %w", err))
	}
	if b.m.measuring.Load() {
		b.m.mu.Lock()
		b.m.lat = append(b.m.lat, d)
		b.m.mu.Unlock()
	}
	return nodes, created, err
}

// roundTrips is a go-redis hook that counts round trips: one per command,
// one per pipeline or transaction, and those made inside a Heartbeat also
// on the call's own counter.
type roundTrips struct{ m *meter }

func (h roundTrips) count(ctx context.Context) {
	h.m.roundTrips.Add(1)
	if n, ok := ctx.Value(heartbeatCall{}).(*atomic.Int64); ok {
		n.Add(1)
	}
}

func (roundTrips) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h roundTrips) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.count(ctx)
		return next(ctx, cmd)
	}
}

func (h roundTrips) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.count(ctx)
		return next(ctx, cmds)
	}
}

// server is one simulated game server. Its players are the contiguous
// numbers [first, next): the oldest leaves first.
type server struct {
	index       int
	fleet       *fleet.Fleet
	first, next atomic.Int64
	inbox       chan string // ids of the handoffs written for it
}

// sim is K simulated servers of one cluster, each with its own Redis
// client, as K server processes would have.
type sim struct {
	d       design
	tick    time.Duration // workloadTick, or longer in a slowed-down run
	ops     bool          // make the claims, locates and handoffs, not only heartbeats
	servers []*server
	clients []*goredis.Client
	m       *meter
	ready   sync.WaitGroup // done as each server is ready, before its first heartbeat
}

// newSim makes k servers of design d on the Redis at addr, with the given
// heartbeat and workload tick; with ops false they only heartbeat, their
// load still wandering. Their clients are configured as
// backplane/redis.Open configures its own (no retries, socket reads bounded
// by the call's deadline), with timeout both as the socket timeout and as
// the fleet's call timeout.
func newSim(d design, k int, addr string, heartbeat, tick, timeout time.Duration, ops bool) (*sim, error) {
	s := &sim{d: d, tick: tick, ops: ops, m: &meter{}}
	s.ready.Add(k)
	logger := slog.New(slog.DiscardHandler) // failures are counted by the meter
	for i := range k {
		rdb := goredis.NewClient(&goredis.Options{
			Addr:        addr,
			DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, PoolTimeout: timeout,
			ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1, DisableIdentity: true,
			PoolSize: poolSize, PipelinePoolSize: pipelinePoolSize,
		})
		s.clients = append(s.clients, rdb)
		if err := warm(context.Background(), rdb); err != nil {
			s.close()
			return nil, err
		}
		rdb.AddHook(roundTrips{s.m})
		bp, err := d.open(rdb, "bench")
		if err != nil {
			s.close()
			return nil, err
		}
		f, err := fleet.New(fleet.Config{
			NodeID:          fmt.Sprintf("s%04d", i),
			Cluster:         "bench",
			Region:          "local",
			InternalAddress: fmt.Sprintf("127.0.0.1:%d", 20000+i),
			PublicAddress:   fmt.Sprintf("127.0.0.1:%d", 40000+i),
			Heartbeat:       heartbeat,
			CallTimeout:     timeout,
			LoadStep:        -1, // the design decides what load is published
		}, &timed{Backplane: bp, m: s.m}, logger)
		if err != nil {
			s.close()
			return nil, err
		}
		s.servers = append(s.servers, &server{index: i, fleet: f, inbox: make(chan string, inboxSize)})
	}
	return s, nil
}

// warm opens the connections a server keeps open once it has run a
// while: two for single commands and two for pipelines, so that a heartbeat or a call in the window does not
// wait for a dial, which the hook would count as one more round trip.
func warm(ctx context.Context, rdb *goredis.Client) error {
	var g errgroup.Group
	for range 2 {
		g.Go(func() error { return rdb.Ping(ctx).Err() })
		g.Go(func() error {
			_, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error { return p.Ping(ctx).Err() })
			return err
		})
	}
	return g.Wait()
}

// close closes every client. Call it after every Run has returned.
func (s *sim) close() {
	for _, c := range s.clients {
		c.Close()
	}
}

// serve runs server srv until ctx ends. It seats the players the server
// starts with and marks it ready, so that its first heartbeat publishes
// it ready, then runs the fleet's Run loop beside the workload, and
// returns when both have ended.
func (s *sim) serve(ctx context.Context, srv *server) {
	rng := rand.New(rand.NewPCG(uint64(srv.index), 1))
	for range startPlayers / roomSize {
		s.openRoom(ctx, srv)
	}
	// The load last published. With steps it is, as in the steady state,
	// off from the true load by less than a step, more often by little.
	published := srv.players()
	if s.d.steps {
		published += rng.IntN(loadStep) - rng.IntN(loadStep)
	}
	srv.fleet.SetLoad(published)
	s.publish(srv, published, 0)
	srv.fleet.MarkReady()
	s.ready.Done()

	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { _ = srv.fleet.Run(ctx) }) // Run returns nil; its failures are counted
	s.drive(ctx, srv, rng, published)
}

// drive runs server srv's workload until ctx ends.
func (s *sim) drive(ctx context.Context, srv *server, rng *rand.Rand, published int) {
	t := time.NewTicker(s.tick)
	defer t.Stop()
	queue := int64(0)
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if rng.IntN(2) == 1 && srv.players()+roomSize <= maxPlayers {
			s.openRoom(ctx, srv)
		}
		if rng.IntN(2) == 1 && srv.players()-roomSize >= minPlayers {
			s.endRoom(ctx, srv)
		}
		if s.ops {
			s.arrive(ctx, srv, rng)
			if n%handoffEvery == 0 {
				s.sendAway(ctx, srv, rng, fmt.Sprintf("s%04d-h%d", srv.index, n))
			}
		}
		if srv.index < 2 {
			queue = max(0, queue+int64(rng.IntN(5))-2)
		}
		published = s.publish(srv, published, queue)
	}
}

// publish sets srv's load (its players) and its queue stats, and returns
// the load now published. With the design's steps the load is published
// only when it has moved loadStep from the one last published, as the
// proposed fleet rule would.
func (s *sim) publish(srv *server, published int, queue int64) int {
	load := srv.players()
	if !s.d.steps || abs(load-published) >= loadStep {
		srv.fleet.SetLoad(load)
		published = load
	}
	switch srv.index {
	case 0:
		srv.fleet.SetStat("queue:duel", queue)
		srv.fleet.SetStat("queue:squad", 0)
	case 1:
		srv.fleet.SetStat("queue:duel", 0)
		srv.fleet.SetStat("queue:squad", queue)
	default:
		srv.fleet.SetStat("queue:duel", 0)
		srv.fleet.SetStat("queue:squad", 0)
	}
	return published
}

func abs(x int) int { return max(x, -x) }

// players returns how many players srv has seated: its load.
func (srv *server) players() int { return int(srv.next.Load() - srv.first.Load()) }

func player(srv int, n int64) string { return fmt.Sprintf("s%04d-p%d", srv, n) }

// openRoom seats roomSize new players and claims them.
func (s *sim) openRoom(ctx context.Context, srv *server) {
	n := srv.next.Load()
	if s.ops {
		s.perRoom(ctx, opClaim, srv.fleet.Claim, roomPlayers(srv, n))
	}
	srv.next.Store(n + roomSize)
}

// endRoom ends the room of the roomSize players seated longest and
// releases them.
func (s *sim) endRoom(ctx context.Context, srv *server) {
	n := srv.first.Load()
	srv.first.Store(n + roomSize)
	if s.ops {
		s.perRoom(ctx, opRelease, srv.fleet.Release, roomPlayers(srv, n))
	}
}

// roomPlayers returns the ids of srv's roomSize players from number n.
func roomPlayers(srv *server, n int64) []string {
	ids := make([]string, roomSize)
	for i := range ids {
		ids[i] = player(srv.index, n+int64(i))
	}
	return ids
}

// perRoom claims or releases (call) a room's players: in one call when the
// design batches, one call per player otherwise.
func (s *sim) perRoom(ctx context.Context, o op, call func(context.Context, string, ...string) error, ids []string) {
	if s.d.batched {
		s.m.done(o, call(ctx, fleet.KindPlayer, ids...))
		return
	}
	for _, id := range ids {
		s.m.done(o, call(ctx, fleet.KindPlayer, id))
	}
}

// peer returns another server than srv, at random.
func (s *sim) peer(srv *server, rng *rand.Rand) *server {
	i := rng.IntN(len(s.servers) - 1)
	if i >= srv.index {
		i++
	}
	return s.servers[i]
}

// arrive is one player arriving at srv: the first of those sent to it, who
// has a handoff waiting, or else one of another server's seated players,
// rejoining through srv. The server finds where the player plays and takes
// its handoff.
func (s *sim) arrive(ctx context.Context, srv *server, rng *rand.Rand) {
	var id string
	select {
	case id = <-srv.inbox:
	default:
		p := s.peer(srv, rng)
		first, next := p.first.Load(), p.next.Load()
		if next <= first {
			return
		}
		id = player(p.index, first+rng.Int64N(next-first))
	}
	if s.d.batched {
		holder, data, err := srv.fleet.Arrive(ctx, fleet.KindPlayer, id)
		switch {
		case err != nil:
			s.m.done(opArrive, err)
		case holder.ID == "" && data == nil:
			s.m.done(opArrive, fleet.ErrNotFound)
		default:
			s.m.done(opArrive, nil)
		}
		return
	}
	_, err := srv.fleet.Locate(ctx, fleet.KindPlayer, id)
	s.m.done(opLocate, err)
	_, err = srv.fleet.TakeHandoff(ctx, id)
	s.m.done(opTake, err)
}

// sendAway sends player id to another server: the handoff first, then
// the "redirect" (the id in the target's inbox).
func (s *sim) sendAway(ctx context.Context, srv *server, rng *rand.Rand, id string) {
	p := s.peer(srv, rng)
	data := fmt.Appendf(nil, `{"kind":"queue","playlist":"duel","player":%q,"waited_ms":%d}`, id, rng.IntN(30000))
	err := srv.fleet.PutHandoff(ctx, p.fleet.ID(), id, data)
	s.m.done(opPut, err)
	if err == nil {
		select {
		case p.inbox <- id:
		default: // the player never arrives; the handoff expires
		}
	}
}
