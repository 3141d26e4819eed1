package redis_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/backplanetest"
	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

func TestMain(m *testing.M) {
	goredis.SetLogger(quiet{}) // failed dials are the point of some tests
	os.Exit(m.Run())
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func open(t *testing.T, url, cluster string) *redis.Backplane {
	t.Helper()
	// A generous socket timeout: 32 racing clients on miniredis under the
	// race detector are slow. Deadlines come from each call's context.
	b, err := redis.Open(redis.Config{URL: url, Cluster: cluster, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestConformanceMiniredis(t *testing.T) {
	backplanetest.Run(t, func(t *testing.T) backplanetest.Harness {
		mr := miniredis.RunT(t)
		// The view indexes expiries by Redis TIME: move miniredis's clock
		// with its TTLs.
		now := time.Now()
		mr.SetTime(now)
		return backplanetest.Harness{
			Open: func(t *testing.T, cluster string) backplane.Backplane { return open(t, mr.Addr(), cluster) },
			Advance: func(_ *testing.T, d time.Duration) {
				now = now.Add(d)
				mr.SetTime(now)
				mr.FastForward(d)
			},
			Stop: func(*testing.T) { mr.Close() },
		}
	})
}

func TestConformanceRedisServer(t *testing.T) {
	t.Parallel() // mostly waiting on the store's clock
	testbin.Need(t, "redis-server")
	backplanetest.Run(t, func(t *testing.T) backplanetest.Harness { return serverHarness(testbin.StartRedis(t)) })
}

// serverHarness is the conformance harness for one server process.
func serverHarness(srv *testbin.Redis) backplanetest.Harness {
	return backplanetest.Harness{
		Open: func(t *testing.T, cluster string) backplane.Backplane { return open(t, srv.Addr, cluster) },
		// Redis expires keys by its own clock; wait for it.
		Advance: func(_ *testing.T, d time.Duration) { time.Sleep(d) },
		Stop:    func(*testing.T) { srv.Stop() },
		Scale:   3, // a busy machine's calls stay inside the margins
	}
}

// TestConformanceValkey runs the suite against valkey-server, the Redis
// fork, when it is on PATH. Debian 12 packages no Valkey, so it is skipped
// there even in CI, where the other servers are required.
func TestConformanceValkey(t *testing.T) {
	t.Parallel() // mostly waiting on the store's clock
	bin, err := exec.LookPath("valkey-server")
	if err != nil {
		t.Skip("valkey-server is not on PATH (Debian 12 has no package); skipping the suite against Valkey")
	}
	backplanetest.Run(t, func(t *testing.T) backplanetest.Harness {
		return serverHarness(testbin.StartRedisWith(t, testbin.RedisOptions{Bin: bin}))
	})
}

// TestCounterHeals checks that a counter found without an expiry (written
// by an old server, or PERSISTed by hand) gets one on its next increment.
func TestCounterHeals(t *testing.T) {
	mr := miniredis.RunT(t)
	b := open(t, mr.Addr(), "heal")
	ctx := t.Context()
	if _, err := b.Increment(ctx, "c", time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	key := "muster:{heal}:k:c"
	raw := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	defer raw.Close()
	if err := raw.Persist(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	if ttl := mr.TTL(key); ttl != 0 {
		t.Fatalf("setup: TTL %v after PERSIST", ttl)
	}
	if n, err := b.Increment(ctx, "c", time.Minute, 1); err != nil || n != 2 {
		t.Fatalf("Increment = %d, %v", n, err)
	}
	if ttl := mr.TTL(key); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("TTL after healing increment = %v, want (0, 1m]", ttl)
	}
}

// TestUnansweringRedis checks that a Redis that accepts connections but
// never answers fails a call at its deadline instead of hanging it.
func TestUnansweringRedis(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, never answer
		}
	}()
	b, err := redis.Open(redis.Config{URL: l.Addr().String(), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, err := b.Heartbeat(ctx, backplane.Node{ID: "a"}, time.Second)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("heartbeat to a silent Redis succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("heartbeat to a silent Redis ignores its context deadline")
	}
}

func TestOpenBadURL(t *testing.T) {
	for _, url := range []string{"", "no-port", "redis://:bad:port:/x", "a:1,b"} {
		if _, err := redis.Open(redis.Config{URL: url}); err == nil {
			t.Errorf("Open(%q): no error", url)
		}
	}
	if _, err := redis.New(goredis.NewClient(&goredis.Options{}), "bad{cluster}"); err == nil {
		t.Error("New with a cluster containing { }: no error")
	}
}
