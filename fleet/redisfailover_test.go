package fleet_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testbin"
)

// okBeats records when the last successful heartbeat started.
type okBeats struct {
	backplane.Backplane
	lastOK atomic.Int64 // UnixNano of the start of the last heartbeat that succeeded
}

func (b *okBeats) Heartbeat(ctx context.Context, n backplane.Node, ttl time.Duration) ([]backplane.Node, bool, error) {
	start := time.Now()
	nodes, changed, err := b.Backplane.Heartbeat(ctx, n, ttl)
	if err == nil {
		b.lastOK.Store(start.UnixNano())
	}
	return nodes, changed, err
}

// TestRedisFailoverSentinel kills the master of a Sentinel group under
// three servers holding claims, and logs how long the fleet was detached
// and how many claims were lost (RELIABILITY.md has the figures).
func TestRedisFailoverSentinel(t *testing.T) {
	goredis.SetLogger(quiet{})
	g := testbin.StartSentinelGroup(t)
	s := g.SentinelAddrs()
	q := url.Values{"master_name": {g.MasterName}, "addr": s[1:], "sentinel_password": {g.SentinelPassword}}
	addr := "redis://:" + g.Password + "@" + s[0] + "?" + q.Encode()
	failover(t, addr, func(ctx context.Context) {
		raw := goredis.NewClient(&goredis.Options{Addr: g.Master.Addr, Password: g.Password})
		defer raw.Close()
		if err := raw.Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
			t.Fatal(err)
		}
		g.Master.Stop()
	})
}

// TestRedisFailoverCluster kills the master of the fleet's hash slot in a
// 3+3 Redis Cluster under three servers holding claims.
func TestRedisFailoverCluster(t *testing.T) {
	goredis.SetLogger(quiet{})
	rc := testbin.StartRedisCluster(t)
	addr := "redis://:" + rc.Password + "@" + rc.Seed() + "?cluster=true"
	failover(t, addr, func(ctx context.Context) {
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
				n.Stop()
				return
			}
		}
		t.Fatalf("master %s not found", master.Options().Addr)
	})
}

// failover starts three servers on the Redis at addr, each claiming 20
// players, calls kill, and waits until every server has a successful
// heartbeat again and sees the other two; then it counts the claims that
// no longer name their holder.
func failover(t *testing.T, addr string, kill func(context.Context)) {
	const perServer = 20
	// Registered first, so it runs after the clients are closed: a pool
	// that failed to dial the dead master retries once a second, and
	// notices the close only then.
	t.Cleanup(func() {
		waitFor(t, "go-redis redials to end", 10*time.Second, func() bool {
			buf := make([]byte, 1<<20)
			return !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "(*ConnPool).tryDial")
		})
	})
	type server struct {
		*fleet.Fleet
		bp *okBeats
	}
	var servers []server
	for i := range 3 {
		bp, err := redis.Open(redis.Config{URL: addr, Cluster: "failover"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bp.Close() })
		s := server{bp: &okBeats{Backplane: bp}}
		s.Fleet, err = fleet.New(fleet.Config{
			NodeID: fmt.Sprintf("s%d", i), InternalAddress: "127.0.0.1:1",
			Heartbeat: 500 * time.Millisecond, CallTimeout: 400 * time.Millisecond,
		}, s.bp, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.Run(ctx)
		}()
		t.Cleanup(func() { cancel(); <-done })
		s.MarkReady()
		servers = append(servers, s)
	}
	for _, s := range servers {
		waitFor(t, s.ID()+" sees three", 30*time.Second, func() bool { return len(s.Nodes()) == 3 })
		for p := range perServer {
			if err := s.Claim(t.Context(), fleet.KindPlayer, fmt.Sprintf("p-%s-%d", s.ID(), p)); err != nil {
				t.Fatal(err)
			}
		}
	}

	kill(t.Context())
	killed := time.Now()
	for _, s := range servers {
		waitFor(t, s.ID()+" attached again", 60*time.Second, func() bool {
			return s.bp.lastOK.Load() > killed.UnixNano() && len(s.Nodes()) == 3
		})
	}
	detached := time.Since(killed)

	lost := 0
	for _, s := range servers {
		for p := range perServer {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			owner, err := s.bp.Locate(ctx, backplane.Key{Kind: fleet.KindPlayer, ID: fmt.Sprintf("p-%s-%d", s.ID(), p)})
			cancel()
			if err != nil || owner != s.ID() {
				lost++
			}
		}
	}
	t.Logf("master killed under 3 servers: all attached again after %v; claims lost: %d of %d",
		detached.Round(10*time.Millisecond), lost, 3*perServer)
	if lost > 0 {
		t.Errorf("%d claims lost in the failover", lost)
	}
}

// waitFor polls cond every 20 ms until it holds or limit passes.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
