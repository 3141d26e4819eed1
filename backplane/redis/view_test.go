package redis_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// testClient returns a client of the Redis at addr, closed when the test
// ends.
func testClient(t *testing.T, addr string) *goredis.Client {
	t.Helper()
	rdb := goredis.NewClient(&goredis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func openTestView(t *testing.T, addr string) *redis.Backplane {
	t.Helper()
	v, err := redis.New(testClient(t, addr), "delta")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func viewOf(t *testing.T, nodes []backplane.Node) map[string]string {
	t.Helper()
	m := make(map[string]string, len(nodes))
	for _, n := range nodes {
		m[n.ID] = string(n.Data)
	}
	return m
}

func beat(t *testing.T, v *redis.Backplane, id, data string) (map[string]string, bool) {
	t.Helper()
	nodes, created, err := v.Heartbeat(t.Context(), backplane.Node{ID: id, Data: []byte(data)}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return viewOf(t, nodes), created
}

func wantView(t *testing.T, what string, got map[string]string, want ...string) {
	t.Helper()
	w := make(map[string]string)
	for i := 0; i < len(want); i += 2 {
		w[want[i]] = want[i+1]
	}
	if !maps.Equal(got, w) {
		t.Fatalf("%s: view %q, want %q", what, got, w)
	}
}

// TestViewStoreLost checks that a reader whose cache predates a Redis
// restart drops it: the new epoch makes it read the view whole.
func TestViewStoreLost(t *testing.T) {
	testbin.Need(t, "redis-server")
	srv := testbin.StartRedis(t)
	a, b := openTestView(t, srv.Addr), openTestView(t, srv.Addr)
	beat(t, a, "a", "a1")
	got, _ := beat(t, b, "b", "b1")
	wantView(t, "before restart", got, "a", "a1", "b", "b1")

	srv.Stop()
	srv.Start()
	got, created := beat(t, b, "b", "b1")
	if !created {
		t.Error("heartbeat after a restart does not report created")
	}
	wantView(t, "after restart", got, "b", "b1")
	got, _ = beat(t, a, "a", "a2")
	wantView(t, "after a's return", got, "a", "a2", "b", "b1")
}

// TestViewForgottenTombstones checks that a reader that has not read
// since a removal whose tombstone is now forgotten reads the view whole,
// and so does not keep the removed node.
func TestViewForgottenTombstones(t *testing.T) {
	testbin.Need(t, "redis-server")
	srv := testbin.StartRedis(t)
	reader, writer := openTestView(t, srv.Addr), openTestView(t, srv.Addr)
	redis.SetTombstoneTTL(reader, 100*time.Millisecond)
	redis.SetTombstoneTTL(writer, 100*time.Millisecond)
	beat(t, writer, "x", "x1")
	got, _ := beat(t, reader, "r", "r1")
	wantView(t, "before leave", got, "r", "r1", "x", "x1")

	if err := writer.Leave(t.Context(), "x"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	beat(t, writer, "w", "w1") // forgets x's tombstone
	got, _ = beat(t, reader, "r", "r1")
	wantView(t, "after the tombstone is forgotten", got, "r", "r1", "w", "w1")
}

// TestViewConcurrent checks that servers sharing one view, each
// changing its record every heartbeat, all end with the same, complete
// view.
func TestViewConcurrent(t *testing.T) {
	testbin.Need(t, "redis-server")
	srv := testbin.StartRedis(t)
	shared := openTestView(t, srv.Addr)
	const servers, beats = 8, 50
	var wg sync.WaitGroup
	for i := range servers {
		wg.Go(func() {
			for n := range beats {
				_, _, err := shared.Heartbeat(t.Context(), backplane.Node{ID: fmt.Sprint("s", i), Data: fmt.Append(nil, n)}, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	var want []string
	for i := range servers {
		want = append(want, fmt.Sprint("s", i), fmt.Sprint(beats-1))
	}
	nodes, err := shared.Nodes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wantView(t, "shared cache", viewOf(t, nodes), want...)
	nodes, err = openTestView(t, srv.Addr).Nodes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wantView(t, "fresh reader", viewOf(t, nodes), want...)
}

// scriptRuns returns how many scripts Redis has run (EVAL and EVALSHA).
func scriptRuns(t *testing.T, rdb *goredis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, cmd := range []string{"cmdstat_eval:", "cmdstat_evalsha:"} {
		if _, rest, ok := strings.Cut(info, cmd); ok {
			var calls int64
			fmt.Sscanf(rest, "calls=%d", &calls)
			n += calls
		}
	}
	return n
}

// twoViews starts a Redis and returns a client of it and two views on it.
func twoViews(t *testing.T) (*goredis.Client, *redis.Backplane, *redis.Backplane) {
	t.Helper()
	srv := testbin.StartRedis(t)
	return testClient(t, srv.Addr), openTestView(t, srv.Addr), openTestView(t, srv.Addr)
}

// TestViewPlainHeartbeat checks that a heartbeat whose record has not
// changed runs no script, and that one whose record changed does.
func TestViewPlainHeartbeat(t *testing.T) {
	rdb, a, b := twoViews(t)
	beat(t, a, "a", "a1")
	beat(t, b, "b", "b1")

	before := scriptRuns(t, rdb)
	for range 5 {
		got, created := beat(t, a, "a", "a1")
		if created {
			t.Fatal("an unchanged heartbeat reports created")
		}
		wantView(t, "unchanged", got, "a", "a1", "b", "b1")
	}
	if n := scriptRuns(t, rdb) - before; n != 0 {
		t.Errorf("5 unchanged heartbeats ran %d scripts, want 0", n)
	}

	before = scriptRuns(t, rdb)
	beat(t, a, "a", "a2")
	if n := scriptRuns(t, rdb) - before; n != 1 {
		t.Errorf("a changed heartbeat ran %d scripts, want 1", n)
	}
	got, _ := beat(t, b, "b", "b1")
	wantView(t, "the other's view after a change", got, "a", "a2", "b", "b1")
}

// TestViewPlainHeartbeatKeyLost checks that an unchanged heartbeat whose
// key is gone (expired, or deleted behind its back) puts the node back
// and reports it created, and one whose key and view hold another record
// (written by a heartbeat whose reply was lost) puts its own in both.
func TestViewPlainHeartbeatKeyLost(t *testing.T) {
	srv := testbin.StartRedis(t)
	rdb := testClient(t, srv.Addr)
	a, b := openTestView(t, srv.Addr), openTestView(t, srv.Addr)
	beat(t, a, "a", "a1")
	beat(t, b, "b", "b1")
	key := "muster:{delta}:n:a"

	if err := rdb.Del(t.Context(), key).Err(); err != nil {
		t.Fatal(err)
	}
	beat(t, b, "b", "b1") // drops a
	got, created := beat(t, a, "a", "a1")
	if !created {
		t.Error("a heartbeat whose key was gone does not report created")
	}
	wantView(t, "after the key was deleted", got, "a", "a1", "b", "b1")

	lost := openTestView(t, srv.Addr)
	beat(t, lost, "a", "a2")
	got, _ = beat(t, a, "a", "a1")
	wantView(t, "after a lost heartbeat", got, "a", "a1", "b", "b1")
	nodes, err := openTestView(t, srv.Addr).Nodes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wantView(t, "a fresh reader, after a lost heartbeat", viewOf(t, nodes), "a", "a1", "b", "b1")
	if v, err := rdb.Get(t.Context(), key).Result(); err != nil || v != "a1" {
		t.Errorf("a's key holds %q, %v; want a1", v, err)
	}
}

// TestViewPlainHeartbeatDropsExpired checks that a reader making plain
// heartbeats drops a node whose key expired: the script runs for it.
func TestViewPlainHeartbeatDropsExpired(t *testing.T) {
	rdb, a, b := twoViews(t)
	// A ttl that b's two heartbeats fit in on a busy machine: with
	// 300 ms, a's key expired before the second, which dropped it.
	const ttl = 2 * time.Second
	if _, _, err := a.Heartbeat(t.Context(), backplane.Node{ID: "a", Data: []byte("a1")}, ttl); err != nil {
		t.Fatal(err)
	}
	beat(t, b, "b", "b1")
	got, _ := beat(t, b, "b", "b1")
	wantView(t, "before a's key expired", got, "a", "a1", "b", "b1")
	waitExpired(t, rdb, "muster:{delta}:n:a", ttl)
	before := scriptRuns(t, rdb)
	got, _ = beat(t, b, "b", "b1")
	wantView(t, "after a's key expired", got, "b", "b1")
	if scriptRuns(t, rdb) == before {
		t.Error("no script ran to drop the expired node")
	}
}

// waitExpired waits until Redis has expired key, written with ttl, by its
// own clock.
func waitExpired(t *testing.T, rdb *goredis.Client, key string, ttl time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(ttl + 30*time.Second); ; time.Sleep(10 * time.Millisecond) {
		n, err := rdb.Exists(t.Context(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never expired", key)
		}
	}
}

// loseReplies makes a client's pipelines fail after Redis ran them, as a
// reply lost to a timeout does.
type loseReplies struct{ on *atomic.Bool }

func (loseReplies) DialHook(next goredis.DialHook) goredis.DialHook          { return next }
func (loseReplies) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }
func (h loseReplies) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		err := next(ctx, cmds)
		if h.on.Load() {
			return errors.New("reply lost")
		}
		return err
	}
}

// TestViewLostReplyAfterExpiry checks that a heartbeat made after its
// node's key expired, whose reply is lost, does not leave the view
// keeping the node without its key; with the last heartbeat's ttl, and
// with a longer one: whether the last key can have expired is judged by
// the ttl it was written with (it was judged by the new one, and a plain
// heartbeat moved the expired node's expiry on).
func TestViewLostReplyAfterExpiry(t *testing.T) {
	// A ttl that b's heartbeat fits in on a busy machine: with 300 ms,
	// the key of the heartbeat whose reply is lost expired before the
	// check.
	const ttl = 2 * time.Second
	for _, c := range []struct {
		name    string
		lostTTL time.Duration
	}{{"same ttl", ttl}, {"longer ttl", time.Hour}} {
		t.Run(c.name, func(t *testing.T) {
			srv := testbin.StartRedis(t)
			rdb := testClient(t, srv.Addr)
			var lost atomic.Bool
			rdb.AddHook(loseReplies{&lost})
			a, err := redis.New(rdb, "delta")
			if err != nil {
				t.Fatal(err)
			}
			b := openTestView(t, srv.Addr)
			na := backplane.Node{ID: "a", Data: []byte("a1")}
			for range 2 {
				if _, _, err := a.Heartbeat(t.Context(), na, ttl); err != nil {
					t.Fatal(err)
				}
			}
			got, _ := beat(t, b, "b", "b1")
			wantView(t, "before a's key expired", got, "a", "a1", "b", "b1")
			waitExpired(t, rdb, "muster:{delta}:n:a", ttl)
			lost.Store(true)
			began := time.Now()
			if _, _, err := a.Heartbeat(t.Context(), na, c.lostTTL); err == nil {
				t.Fatal("the heartbeat whose reply was lost reports success")
			}
			nodes, err := b.Nodes(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			key, err := rdb.Exists(t.Context(), "muster:{delta}:n:a").Result()
			if err != nil {
				t.Fatal(err)
			}
			if time.Since(began) >= c.lostTTL {
				return // the key it may have written has expired too: no check
			}
			if _, listed := viewOf(t, nodes)["a"]; listed && key == 0 {
				t.Error("the view lists a, whose key is gone")
			}
		})
	}
}

// TestViewPlainHeartbeatRepairs checks that an unchanged heartbeat puts
// back its node's entry in the expiry index when it is missing, and its
// record in the view when the view's copy differs from the key's.
func TestViewPlainHeartbeatRepairs(t *testing.T) {
	srv := testbin.StartRedis(t)
	rdb := testClient(t, srv.Addr)
	a := openTestView(t, srv.Addr)
	beat(t, a, "a", "a1")
	const exp, data = "muster:{delta}:v:exp", "muster:{delta}:v:data"

	if err := rdb.ZRem(t.Context(), exp, "a").Err(); err != nil {
		t.Fatal(err)
	}
	beat(t, a, "a", "a1")
	if err := rdb.ZScore(t.Context(), exp, "a").Err(); err != nil {
		t.Errorf("a's entry in the expiry index, removed, is not back: %v", err)
	}

	if err := rdb.HSet(t.Context(), data, "a", "stale").Err(); err != nil {
		t.Fatal(err)
	}
	beat(t, a, "a", "a1")
	if v, err := rdb.HGet(t.Context(), data, "a").Result(); err != nil || v != "a1" {
		t.Errorf("the view's copy of a is %q, %v; want a1", v, err)
	}
}
