package redis_test

import (
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/internal/testbin"
)

func openTestView(t *testing.T, addr string) *redis.Backplane {
	t.Helper()
	rdb := goredis.NewClient(&goredis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	v, err := redis.New(rdb, "delta")
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
