package fleet_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
	"github.com/muster-gg/muster/internal/testkit/testbin"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// beats counts heartbeat attempts, so the test can wait for a number of
// them instead of for a time.
type beats struct {
	backplane.Backplane
	n atomic.Int64
}

func (b *beats) Heartbeat(ctx context.Context, n backplane.Node, ttl time.Duration) ([]backplane.Node, bool, error) {
	b.n.Add(1)
	return b.Backplane.Heartbeat(ctx, n, ttl)
}

type outageServer struct {
	*fleet.Fleet
	beats *beats
	logs  *fleettest.Logs
}

// waitBeats waits until s has made n more heartbeat attempts.
func (s outageServer) waitBeats(t *testing.T, n int64) {
	t.Helper()
	target := s.beats.n.Load() + n
	testrun.WaitFor(t, fmt.Sprintf("%s: %d heartbeats", s.ID(), n), func() bool { return s.beats.n.Load() >= target })
}

func startOutageServer(t *testing.T, addr, id string) outageServer {
	t.Helper()
	bp, err := redis.Open(redis.Config{URL: addr, Cluster: "outage"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bp.Close() })
	s := outageServer{beats: &beats{Backplane: bp}, logs: &fleettest.Logs{}}
	s.Fleet, err = fleet.New(fleet.Config{
		NodeID: id, InternalAddress: "127.0.0.1:1",
		Heartbeat: 300 * time.Millisecond, CallTimeout: 150 * time.Millisecond,
	}, s.beats, slog.New(s.logs))
	if err != nil {
		t.Fatal(err)
	}
	testrun.GoRun(t, s.Run)
	s.MarkReady()
	return s
}

// TestOutageRedisServer stops a real redis-server under three servers and
// starts it again empty.
func TestOutageRedisServer(t *testing.T) {
	goredis.SetLogger(quiet{})
	srv := testbin.StartRedis(t)
	var servers []outageServer
	for i := range 3 {
		servers = append(servers, startOutageServer(t, srv.Addr, fmt.Sprintf("s%d", i)))
	}
	for _, s := range servers {
		testrun.WaitFor(t, s.ID()+" sees three", func() bool { return len(s.Nodes()) == 3 })
		if err := s.Claim(t.Context(), fleet.KindPlayer, "p-"+s.ID()); err != nil {
			t.Fatal(err)
		}
	}

	// A call that timed out on a busy machine is an outage of its own, and
	// logged: count from a moment no server is in one.
	outages := make([]int, len(servers))
	for i, s := range servers {
		testrun.WaitFor(t, s.ID()+" reachable", func() bool {
			return s.logs.Count("backplane unreachable") == s.logs.Count("backplane reachable again")
		})
		outages[i] = s.logs.Count("backplane unreachable")
	}
	srv.Stop()
	for i, s := range servers {
		testrun.WaitFor(t, s.ID()+" alone", s.Alone)
		s.waitBeats(t, 4)
		if n := s.logs.Count("backplane unreachable") - outages[i]; n != 1 {
			t.Errorf("%s logged the outage %d times over several heartbeats, want once", s.ID(), n)
		}
		if s.State() != fleet.StateReady {
			t.Errorf("%s is %s during the outage, want ready", s.ID(), s.State())
		}
	}
	// A claim made during the outage is held and asserted on return.
	if err := servers[0].Claim(t.Context(), fleet.KindPlayer, "during"); err == nil {
		t.Error("claim during the outage reports success")
	}

	// A server started while Redis is down starts and serves.
	late := startOutageServer(t, srv.Addr, "late")
	if late.State() != fleet.StateReady || !late.Alone() {
		t.Errorf("server started during the outage: %s, alone %v", late.State(), late.Alone())
	}

	returns := make([]int, len(servers))
	for i, s := range servers {
		returns[i] = s.logs.Count("backplane reachable again")
	}
	srv.Start() // empty
	all := append(servers, late)
	for _, s := range all {
		testrun.WaitFor(t, s.ID()+" rejoins", func() bool { return len(s.Nodes()) == 4 })
	}
	for i, s := range servers {
		if n := s.logs.Count("backplane reachable again") - returns[i]; n != 1 {
			t.Errorf("%s logged its return %d times, want once", s.ID(), n)
		}
	}
	want := map[string]string{"p-s0": "s0", "p-s1": "s1", "p-s2": "s2", "during": "s0"}
	for player, owner := range want {
		testrun.WaitFor(t, "claim "+player+" re-asserted", func() bool {
			n, err := late.Locate(t.Context(), fleet.KindPlayer, player)
			return err == nil && n.ID == owner
		})
	}
}

// TestRestartBetweenHeartbeats restarts Redis empty faster than a call
// fails; the record's absence alone must trigger the re-assertion.
func TestRestartBetweenHeartbeats(t *testing.T) {
	goredis.SetLogger(quiet{})
	srv := testbin.StartRedis(t)
	a := startOutageServer(t, srv.Addr, "a")
	b := startOutageServer(t, srv.Addr, "b")
	testrun.WaitFor(t, "two servers", func() bool { return len(a.Nodes()) == 2 })
	if err := a.Claim(t.Context(), fleet.KindLobby, "ABCD"); err != nil {
		t.Fatal(err)
	}
	// FLUSHALL is what a restart without persistence looks like to a
	// client that kept its connection.
	raw := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	defer raw.Close()
	if err := raw.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	testrun.WaitFor(t, "lobby re-asserted", func() bool {
		n, err := b.Locate(t.Context(), fleet.KindLobby, "ABCD")
		return err == nil && n.ID == "a"
	})
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
