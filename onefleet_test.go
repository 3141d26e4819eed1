package muster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testbin"
	"github.com/muster-gg/muster/room"
)

// One connection and one seat per player across a fleet on a real Redis
// (#39): the room package's tests run the same on the memory backplane.

// welcomedOn connects player id to s as a new player and returns the
// connection once welcomed.
func welcomedOn(t *testing.T, s *testServer, id string) *playtest.Conn {
	t.Helper()
	tk, err := s.Tickets().Issue(id)
	if err != nil {
		t.Fatal(err)
	}
	c := playtest.DialPlay(t, "http://"+s.addr, "ticket="+tk)
	c.Welcome("new")
	return c
}

// TestNewerConnectionElsewhereReplacesOnRedis: a player connected to A
// connects again to B: A's connection is closed with 4004 within about a
// heartbeat, and B's stays.
func TestNewerConnectionElsewhereReplacesOnRedis(t *testing.T) {
	rd := testbin.StartRedis(t)
	a := startSlowServer(t, rd.Addr, "a", 100)
	b := startSlowServer(t, rd.Addr, "b", 100)
	seesReady(t, a, b)
	seesReady(t, b, a)
	onA := welcomedOn(t, a, "p")
	ended := make(chan websocket.StatusCode, 1)
	go func() { ended <- onA.CloseCode() }()
	welcomedOn(t, b, "p")
	since := time.Now()
	if code := <-ended; code != room.StatusReplaced {
		t.Fatalf("A's connection ended with %d after %v, want %d (replaced)", code, time.Since(since), room.StatusReplaced)
	}
	t.Logf("closed on A %v after the welcome on B (heartbeat %v)", time.Since(since), slowHeartbeat)
	if !b.Host().Connected("p") {
		t.Fatal("the newer connection on B is gone")
	}
}

// TestOneSeatAcrossServersOnRedis: the same player in rooms opened at
// once on two servers is seated in one: the other fails with ErrSeated.
// The calls' deadlines are 1 s: a claim that gives up seats its player as
// claimed (the backplane cannot answer), and with 125 ms a busy machine
// made both claims give up and seated the player twice.
func TestOneSeatAcrossServersOnRedis(t *testing.T) {
	rd := testbin.StartRedis(t)
	servers := []*testServer{
		startSlowServerWith(t, rd.Addr, "a", 100, 4*time.Second, quiet),
		startSlowServerWith(t, rd.Addr, "b", 100, 4*time.Second, quiet),
	}
	seesReady(t, servers[0], servers[1])
	seesReady(t, servers[1], servers[0])
	for round := range 10 {
		shared := fmt.Sprintf("p%d", round)
		start := make(chan struct{})
		errs := make([]error, len(servers))
		var wg sync.WaitGroup
		for i, s := range servers {
			wg.Go(func() {
				<-start
				errs[i] = s.Host().Open(context.Background(), room.Info{
					ID:      fmt.Sprintf("r%d-%s", round, s.NodeID()),
					Players: []string{shared, fmt.Sprintf("own%d-%s", round, s.NodeID())},
				})
			})
		}
		close(start)
		wg.Wait()
		opened := 0
		for i, err := range errs {
			switch {
			case err == nil:
				opened++
			case !errors.Is(err, room.ErrSeated):
				t.Fatalf("round %d: open on %s: %v, want ErrSeated", round, servers[i].NodeID(), err)
			}
		}
		if opened != 1 {
			t.Fatalf("round %d: %d rooms opened with %s (%v), want 1", round, opened, shared, errs)
		}
		seated := 0
		for _, s := range servers {
			if s.Host().RoomOf(shared) != "" {
				seated++
			}
		}
		if seated != 1 {
			t.Fatalf("round %d: %s seated on %d servers", round, shared, seated)
		}
	}
}
