package redis

import (
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// beatOnce starts a redis-server and makes node a's first heartbeat with
// ttl through a new Backplane, which it returns with a client of the
// server and the node.
func beatOnce(t *testing.T, ttl time.Duration) (*Backplane, *goredis.Client, backplane.Node) {
	t.Helper()
	srv := testbin.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: srv.Addr, DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	b, err := New(rdb, "clock")
	if err != nil {
		t.Fatal(err)
	}
	n := backplane.Node{ID: "a", Data: []byte("a1")}
	if _, _, err := b.Heartbeat(t.Context(), n, ttl); err != nil {
		t.Fatal(err)
	}
	return b, rdb, n
}

// TestPlainHeartbeatNeedsClock checks that a heartbeat whose client has
// written its record but holds no reading of Redis's clock (the whole-log
// read after its script failed) does not reckon an expiry from nothing:
// the index must not keep the node past its key.
func TestPlainHeartbeatNeedsClock(t *testing.T) {
	const ttl = time.Minute
	b, rdb, n := beatOnce(t, ttl)
	b.view.mu.Lock()
	b.view.storeMs, b.view.at = 0, time.Time{}
	b.view.mu.Unlock()
	if _, _, err := b.Heartbeat(t.Context(), n, ttl); err != nil {
		t.Fatal(err)
	}
	at, err := rdb.ZScore(t.Context(), b.prefix+"v:exp", "a").Result()
	if err != nil {
		t.Fatal(err)
	}
	now, err := rdb.Time(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	if late := time.Duration(int64(at)-now.UnixMilli()) * time.Millisecond; late > ttl {
		t.Errorf("the index expects a's key to expire in %v, its ttl is %v", late, ttl)
	}
}

// TestPlainHeartbeatClockBack checks that the index never expects a key
// to expire later than it does when this client's reading of Redis's
// clock is ahead of it (Redis's clock stepped back, or a failover moved
// to a host whose clock is behind).
func TestPlainHeartbeatClockBack(t *testing.T) {
	b, rdb, n := beatOnce(t, time.Minute)
	b.view.mu.Lock()
	b.view.storeMs += (10 * time.Minute).Milliseconds()
	b.view.mu.Unlock()
	if _, _, err := b.Heartbeat(t.Context(), n, time.Minute); err != nil {
		t.Fatal(err)
	}
	at, err := rdb.ZScore(t.Context(), b.prefix+"v:exp", "a").Result()
	if err != nil {
		t.Fatal(err)
	}
	pttl, err := rdb.PTTL(t.Context(), b.prefix+"n:a").Result()
	if err != nil {
		t.Fatal(err)
	}
	now, err := rdb.Time(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	if late := time.Duration(int64(at)-now.UnixMilli())*time.Millisecond - pttl; late > 50*time.Millisecond {
		t.Errorf("the index expects a's key to expire %v after it does", late)
	}
}
