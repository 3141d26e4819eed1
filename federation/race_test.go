package federation

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// TestTwoHomesRaceOnRedis: two Home values on one Redis race approve
// against revoke, report against report, and report against the
// reporting server's revocation, 1,000 times each, and joins against the
// per-node server limit; no update is lost.
func TestTwoHomesRaceOnRedis(t *testing.T) {
	t.Parallel()
	addr := ""
	if _, err := exec.LookPath("redis-server"); err == nil {
		addr = testbin.StartRedis(t).Addr
	} else {
		addr = miniredis.RunT(t).Addr()
	}
	c := newClock()
	openBP := func(cluster string) *redis.Backplane {
		bp, err := redis.Open(redis.Config{URL: addr, Cluster: cluster, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bp.Close() })
		return bp
	}
	open := func() *env {
		return newEnvOn(t, HomeConfig{
			Limits:            RateLimits{Join: -1, Announce: -1, Rooms: -1, PerIP: -1},
			MaxServersPerNode: 2000, RequestTimeout: time.Minute,
		}, openBP("race"), c)
	}
	a, b := open(), open()
	ctx := context.Background()
	const rounds = 1000

	nodeKey, sk := a.sydney()
	a.announce(sk, nil)
	var lost atomic.Int64
	check := func(i int, ok bool, format string, args ...any) {
		t.Helper()
		if !ok {
			t.Errorf("round %d: "+format, append([]any{i}, args...)...)
			lost.Add(1)
		}
	}
	// The rounds run in lanes, to overlap the round trips; each lane has
	// its own room.
	const lanes = 8
	inLanes := func(round func(lane, i int)) {
		var lw sync.WaitGroup
		for l := range lanes {
			lw.Go(func() {
				for i := l; i < rounds; i += lanes {
					round(l, i)
				}
			})
		}
		lw.Wait()
	}
	// Approve racing revoke, and two reports of one room.
	inLanes(func(l, i int) {
		id := fmt.Sprintf("n%d", i)
		if _, _, err := a.home.CreateNode(ctx, NodeSpec{ID: id, Country: "FR"}); err != nil {
			t.Error(err)
			return
		}
		room := fmt.Sprintf("r%d", l)
		var wg sync.WaitGroup
		wg.Go(func() { _ = a.home.Approve(ctx, id) })
		wg.Go(func() { _ = b.home.RevokeNode(ctx, id) })
		wg.Go(func() { serve(t, a.h, "POST", PathRooms, sk, report(room, uint64(2*i+1), "a"), "192.0.2.1:1") })
		wg.Go(func() { serve(t, b.h, "POST", PathRooms, sk, report(room, uint64(2*i+2), "b"), "192.0.2.1:1") })
		wg.Wait()
		n, err := b.home.node(ctx, id)
		check(i, err == nil && n.Revoked && !n.Approved, "node after approve racing revoke: %+v %v", n, err)
		r, err := a.home.Room(ctx, room)
		check(i, err == nil && r.Seq == uint64(2*i+2), "room after racing reports: seq %d %v, want %d", r.Seq, err, 2*i+2)
	})
	// A report racing its server's revocation.
	inLanes(func(_, i int) {
		victim, vk := b.join(nodeKey)
		b.announce(vk, nil)
		room := fmt.Sprintf("v%d", i)
		var wg sync.WaitGroup
		wg.Go(func() { serve(t, a.h, "POST", PathRooms, vk, report(room, 1, "x"), "192.0.2.1:1") })
		if err := b.home.RevokeServer(ctx, victim); err != nil {
			t.Error(err)
		}
		wg.Wait()
		raw, _ := a.bp.Record(ctx, collRooms, room)
		check(i, raw == nil, "a revoked server's room is in the register: %s", raw)
	})

	if lost.Load() > 0 {
		t.Fatalf("%d lost updates", lost.Load())
	}
	// The per-node server limit holds across homes.
	var wg sync.WaitGroup
	cfg := HomeConfig{MaxServersPerNode: 10, Limits: RateLimits{Join: -1, PerIP: -1}, RequestTimeout: time.Minute}
	capA := newEnvOn(t, cfg, openBP("cap"), c)
	capB := newEnvOn(t, cfg, openBP("cap"), c)
	capKey := capA.createNode("cap", "DE", true)
	var joined atomic.Int64
	for g := range 40 {
		wg.Go(func() {
			h := capA.h
			if g%2 == 1 {
				h = capB.h
			}
			res := serve(t, h, "POST", PathJoin, capKey, joinRequest{}, "192.0.2.1:1")
			switch res.Status {
			case http.StatusCreated:
				joined.Add(1)
			case http.StatusConflict:
			default:
				t.Errorf("join: %d %s", res.Status, res.Body)
			}
		})
	}
	wg.Wait()
	n, err := capA.home.Node(ctx, "cap")
	if err != nil || joined.Load() != 10 || len(n.Servers) != 10 {
		t.Fatalf("40 racing joins under a limit of 10: %d joined, %d servers, %v", joined.Load(), len(n.Servers), err)
	}
	if _, err := a.home.Room(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
}
