package redis_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/backplanetest"
	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// The conformance suite against the deployments real fleets run. Each test
// starts its deployment once and shares it among the suite's cases: every
// case has fleets of its own (cluster names with a fresh prefix), and its
// Stop cuts that case's connections rather than the deployment.

// TestConformanceExternal runs the suite against the deployment that
// MUSTER_TEST_REDIS names (any address Open accepts), with the TLS files
// of MUSTER_TEST_REDIS_TLS_CA_FILE, _CERT_FILE and _KEY_FILE. It writes
// keys under muster:{conformance-...} and deletes them after each case.
func TestConformanceExternal(t *testing.T) {
	u := os.Getenv("MUSTER_TEST_REDIS")
	if u == "" {
		t.Skip("MUSTER_TEST_REDIS is not set; skipping the suite against an external Redis")
	}
	conformance(t, redis.Config{
		URL:         u,
		TLSCAFile:   os.Getenv("MUSTER_TEST_REDIS_TLS_CA_FILE"),
		TLSCertFile: os.Getenv("MUSTER_TEST_REDIS_TLS_CERT_FILE"),
		TLSKeyFile:  os.Getenv("MUSTER_TEST_REDIS_TLS_KEY_FILE"),
	}, true)
}

// The deployment tests run one at a time: the suite's races are sized
// for one store on a busy machine.

func TestConformanceAuth(t *testing.T) {
	t.Parallel() // mostly waiting on the store's clock
	srv := testbin.StartRedisWith(t, testbin.RedisOptions{
		Password: "default-pw",
		Users:    []string{"app on >app-pw ~* &* +@all"},
	})
	t.Run("requirepass", func(t *testing.T) {
		conformance(t, redis.Config{URL: "redis://:default-pw@" + srv.Addr}, false)
	})
	t.Run("acl-user", func(t *testing.T) {
		conformance(t, redis.Config{URL: "redis://app:app-pw@" + srv.Addr}, false)
	})
	t.Run("wrong-password", func(t *testing.T) {
		err := firstCall(t, redis.Config{URL: "redis://app:wrong-pw@" + srv.Addr})
		if err == nil || strings.Contains(err.Error(), "wrong-pw") {
			t.Fatalf("call with a wrong password: %v", err)
		}
	})
}

func TestConformanceTLS(t *testing.T) {
	t.Parallel() // mostly waiting on the store's clock
	ca := testbin.NewCA(t)
	cert, key := ca.Issue(t, "client")
	srv := testbin.StartRedisWith(t, testbin.RedisOptions{TLS: ca})
	mtls := testbin.StartRedisWith(t, testbin.RedisOptions{TLS: ca, ClientCerts: true})
	t.Run("private-ca", func(t *testing.T) {
		conformance(t, redis.Config{URL: "rediss://" + srv.Addr, TLSCAFile: ca.CertFile}, false)
	})
	t.Run("mtls", func(t *testing.T) {
		conformance(t, redis.Config{URL: "rediss://" + mtls.Addr, TLSCAFile: ca.CertFile, TLSCertFile: cert, TLSKeyFile: key}, false)
	})
	t.Run("unknown-ca", func(t *testing.T) {
		if err := firstCall(t, redis.Config{URL: "rediss://" + srv.Addr}); err == nil {
			t.Fatal("a server signed by an unknown CA was trusted")
		}
	})
	t.Run("mtls-without-certificate", func(t *testing.T) {
		if err := firstCall(t, redis.Config{URL: "rediss://" + mtls.Addr, TLSCAFile: ca.CertFile}); err == nil {
			t.Fatal("a server that wants a client certificate took a client without one")
		}
	})
}

func TestConformanceSentinel(t *testing.T) {
	t.Parallel() // mostly waiting on the store's clock
	g := testbin.StartSentinelGroup(t)
	conformance(t, redis.Config{URL: sentinelURL(g)}, false)
}

func TestConformanceCluster(t *testing.T) {
	t.Parallel() // mostly waiting on the store's clock
	// A node failed over in the middle of the cases (a starved machine
	// misses a 1 s node timeout) answers every call CLUSTERDOWN.
	rc := testbin.StartRedisCluster(t, testbin.ClusterOptions{NodeTimeout: 5 * time.Second})
	conformance(t, redis.Config{URL: clusterURL(rc)}, false)
	t.Run("Failover", func(t *testing.T) { clusterFailover(t, rc) })
}

// sentinelURL is the address of g's master through its sentinels, with
// every password.
func sentinelURL(g *testbin.SentinelGroup) string {
	s := g.SentinelAddrs()
	q := url.Values{"master_name": {g.MasterName}, "addr": s[1:], "sentinel_password": {g.SentinelPassword}}
	return "redis://:" + g.Password + "@" + s[0] + "/0?" + q.Encode()
}

// clusterURL is the address of rc through one seed.
func clusterURL(rc *testbin.RedisCluster) string {
	return "redis://:" + rc.Password + "@" + rc.Seed() + "?cluster=true"
}

// firstCall opens cfg and returns the error of one heartbeat.
func firstCall(t *testing.T, cfg redis.Config) error {
	t.Helper()
	b, err := redis.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, _, err = b.Heartbeat(ctx, backplane.Node{ID: "a"}, time.Second)
	return err
}

// conformance runs the suite on the deployment cfg names, sharing it among
// the cases. With clean, each case's keys are deleted after it.
func conformance(t *testing.T, cfg redis.Config, clean bool) {
	t.Helper()
	if cfg.Timeout == 0 {
		// Generous for the race detector on a busy machine: 32 racers'
		// calls over TLS outlasted 5 s beside a CPU hog.
		cfg.Timeout = 15 * time.Second
	}
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	run := "conformance-" + strings.ToLower(rand.Text()[:8])
	var cases atomic.Int64
	backplanetest.Run(t, func(t *testing.T) backplanetest.Harness {
		prefix := fmt.Sprintf("%s-%d-", run, cases.Add(1))
		g := &gate{}
		if clean {
			t.Cleanup(func() { deleteFleets(t, cfg, prefix) })
		}
		return backplanetest.Harness{
			Open: func(t *testing.T, cluster string) backplane.Backplane {
				c := redis.WithDial(cfg, g.wrap)
				c.Cluster = prefix + cluster
				b, err := redis.Open(c)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { b.Close() })
				return b
			},
			// Redis expires keys by its own clock; wait for it.
			Advance: func(_ *testing.T, d time.Duration) { time.Sleep(d) },
			Stop:    func(*testing.T) { g.stop() },
			Scale:   3, // TLS, Sentinel and Cluster calls are slow on a busy machine
		}
	})
}

// deleteFleets deletes the keys of every fleet whose name starts with
// prefix.
func deleteFleets(t *testing.T, cfg redis.Config, prefix string) {
	b, err := redis.Open(cfg)
	if err != nil {
		t.Error(err)
		return
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	del := func(ctx context.Context, c *goredis.Client) error {
		iter := c.Scan(ctx, 0, "muster:{"+prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := c.Del(ctx, iter.Val()).Err(); err != nil {
				return err
			}
		}
		return iter.Err()
	}
	switch c := redis.Client(b).(type) {
	case *goredis.ClusterClient:
		err = c.ForEachMaster(ctx, del)
	case *goredis.Client:
		err = del(ctx, c)
	}
	if err != nil {
		t.Errorf("delete the suite's keys: %v", err)
	}
}

// gate passes dials through until stop, which closes every connection it
// passed and refuses new ones: the deployment becomes unreachable for the
// clients that dial through it, and only for them.
type gate struct {
	mu      sync.Mutex
	stopped bool
	conns   []net.Conn
}

var errGateStopped = errors.New("gate: stopped")

func (g *gate) wrap(next redis.Dialer) redis.Dialer {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		g.mu.Lock()
		stopped := g.stopped
		g.mu.Unlock()
		if stopped {
			return nil, errGateStopped
		}
		c, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.stopped {
			c.Close()
			return nil, errGateStopped
		}
		g.conns = append(g.conns, c)
		return c, nil
	}
}

func (g *gate) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	for _, c := range g.conns {
		c.Close()
	}
	g.conns = nil
}
