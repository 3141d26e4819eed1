package redis_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// clusterFailover kills the master that holds a fleet's keys and
// checks that the backplane follows the cluster to the promoted replica
// without losing a claim, and that no call meanwhile outlives its deadline
// by much; then stops the whole cluster and times calls against it. It
// logs the figures: the goal is a fleet detached at most 5 s with the
// cluster's 1 s node timeout, and calls within 10 % of their deadline.
// It stops nodes of rc: run it last on a cluster.
func clusterFailover(t *testing.T, rc *testbin.RedisCluster) {
	b, err := redis.Open(redis.Config{URL: clusterURL(rc), Cluster: "failover"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	key := backplane.Key{Kind: "player", ID: "p1"}
	call := func(d time.Duration) error {
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		if _, _, err := b.Heartbeat(ctx, backplane.Node{ID: "n1"}, 10*time.Second); err != nil {
			return err
		}
		return b.Claim(ctx, "n1", key)
	}
	if err := call(5 * time.Second); err != nil {
		t.Fatal(err)
	}

	// The master of the fleet's one hash slot; wait until its replica has
	// the claim, so that a lost write would be the backplane's fault.
	master, err := redis.Client(b).(*goredis.ClusterClient).MasterForKey(ctx, "muster:{failover}:n")
	if err != nil {
		t.Fatal(err)
	}
	addr := master.Options().Addr
	waitReplicated(t, master)
	var victim *testbin.Redis
	for _, n := range rc.Nodes {
		if n.Addr == addr {
			victim = n
		}
	}
	if victim == nil {
		t.Fatalf("master %s is not one of the cluster's nodes", addr)
	}
	victim.Stop()
	killed := time.Now()

	const deadline = 500 * time.Millisecond
	var worst time.Duration
	for {
		start := time.Now()
		err := call(deadline)
		if over := time.Since(start) - deadline; over > worst {
			worst = over
		}
		if err == nil {
			break
		}
		if time.Since(killed) > 60*time.Second {
			t.Fatalf("the backplane has not followed the failover after 60 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	detached := time.Since(killed)
	owner, err := b.Locate(ctx, key)
	if err != nil || owner != "n1" {
		t.Fatalf("after the failover, Locate = %q, %v; want the claim kept", owner, err)
	}
	t.Logf("master %s killed: detached %v; worst call past its %v deadline: %v", addr, detached.Round(10*time.Millisecond), deadline, worst.Round(time.Millisecond))

	// The whole cluster away: a call fails at its deadline, not after a
	// client-side load of its own.
	for _, n := range rc.Nodes {
		n.Stop()
	}
	worst = 0
	for range 5 {
		start := time.Now()
		if err := call(deadline); err == nil {
			t.Fatal("a call to a stopped cluster succeeded")
		}
		worst = max(worst, time.Since(start))
	}
	t.Logf("cluster stopped: slowest of 5 calls with a %v deadline took %v", deadline, worst.Round(time.Millisecond))
}

// waitReplicated waits until a replica of master has every write master
// took so far. WAIT counts the replicas that have the writes of its own
// connection, and answers 0 when none has them within its timeout: it
// follows a write of its own, in the fleet's hash slot, on one connection
// (replication keeps the master's order, so the writes before it are
// there too), and is asked again until a replica has it. It used to be
// asked once, on any connection of the pool, and its answer not read.
func waitReplicated(t *testing.T, master *goredis.Client) {
	t.Helper()
	conn := master.Conn()
	defer conn.Close()
	if err := conn.Set(t.Context(), "test:{failover}:fence", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for began := time.Now(); ; {
		n, err := conn.Do(t.Context(), "WAIT", 1, 1000).Int64()
		if err != nil {
			t.Fatal(err)
		}
		if n >= 1 {
			return
		}
		if time.Since(began) > time.Minute {
			t.Fatalf("no replica of master %s has its writes after a minute", master.Options().Addr)
		}
	}
}
