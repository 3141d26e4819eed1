package federation

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestRegionsCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{RegionsCache: 5 * time.Second})
	_, sk := e.sydney()
	if got := regionNodes(e.regions()); len(got) != 0 {
		t.Fatalf("before any announce: %v", got)
	}
	e.announce(sk, nil)
	if got := regionNodes(e.regions()); len(got) != 0 {
		t.Fatalf("cached list changed within 5s: %v", got)
	}
	e.clock.Advance(5 * time.Second)
	if got := regionNodes(e.regions()); !slices.Equal(got, []string{"au-sydney"}) {
		t.Fatalf("after 5s: %v", got)
	}
	// An admin change made here clears the cache at once.
	if err := e.home.RevokeNode(context.Background(), "au-sydney"); err != nil {
		t.Fatal(err)
	}
	if got := regionNodes(e.regions()); len(got) != 0 {
		t.Fatalf("revoked node still listed: %v", got)
	}
}

// TestConcurrentRoomReports: racing reports of one room leave the newest.
func TestConcurrentRoomReports(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{Limits: RateLimits{Rooms: -1, PerIP: -1}})
	_, sk := e.sydney()
	e.announce(sk, nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				seq := uint64(i*8 + g + 1)
				serve(t, e.h, "POST", PathRooms, sk, report("r", seq, "p"+string(rune('a'+g))), "192.0.2.1:1")
			}
		})
	}
	wg.Wait()
	r, err := e.home.Room(context.Background(), "r")
	if err != nil || r.Seq != 200 {
		t.Fatalf("room after racing reports: seq %d, %v", r.Seq, err)
	}
}
