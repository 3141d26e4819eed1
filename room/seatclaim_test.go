package room_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/room"
)

// seatWatch is a module, on every server, that follows the rooms' seats
// (RoomWatcher) and keeps every instant a player was in two rooms.
type seatWatch struct {
	mu    sync.Mutex
	seats map[string]map[string]bool // room -> its players
	twice []string
}

func (w *seatWatch) Attach(room.ModuleHost) error { return nil }

func (w *seatWatch) RoomChanged(s room.RoomState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s.Ended {
		delete(w.seats, s.ID)
		return
	}
	players := make(map[string]bool, len(s.Players))
	for _, id := range s.Players {
		players[id] = true
		for other, in := range w.seats {
			if other != s.ID && in[id] {
				w.twice = append(w.twice, fmt.Sprintf("%s in %s and %s", id, other, s.ID))
			}
		}
	}
	w.seats[s.ID] = players
}

func (w *seatWatch) seenTwice() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.twice
}

// One player in two rooms opened at once on two servers (two lobbies
// started at once, or a lobby and a match) is seated in one of them: the
// other room fails with ErrSeated and seats nobody, and the claim it took
// for its own player is given back.
func TestPlayerSeatedOnceAcrossServers(t *testing.T) {
	w := &seatWatch{seats: make(map[string]map[string]bool)}
	servers := hosttest.StartServers(t, hosttest.Sockets{Servers: 2, Modules: func(int) []room.Module { return []room.Module{w} }})
	for round := range 5 {
		shared := fmt.Sprintf("p%d", round)
		start := make(chan struct{})
		errs := make([]error, len(servers))
		var wg sync.WaitGroup
		for i, s := range servers {
			wg.Go(func() {
				<-start
				_, errs[i] = s.Host.OpenRoom(context.Background(), room.Info{
					ID:      fmt.Sprintf("r%d-%s", round, s.ID()),
					Players: []string{shared, fmt.Sprintf("own%d-%s", round, s.ID())},
				})
			})
		}
		close(start)
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Fatalf("round %d: both rooms opened with %s", round, shared)
			case err == nil:
				won = i
			case !errors.Is(err, room.ErrSeated):
				t.Fatalf("round %d: open on %s: %v, want ErrSeated", round, servers[i].ID(), err)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: neither room opened: %v", round, errs)
		}
		lost := servers[1-won]
		own := fmt.Sprintf("own%d-%s", round, lost.ID())
		for _, s := range servers {
			if r := s.Host.RoomOf(own); r != "" {
				t.Fatalf("round %d: %s, of the room that was not opened, is seated in %s on %s", round, own, r, s.ID())
			}
		}
		if got := servers[won].Host.RoomOf(shared); got == "" {
			t.Fatalf("round %d: %s is seated nowhere", round, shared)
		}
		testrun.WaitFor(t, "the claim on "+own+" given back", func() bool {
			_, err := lost.Locate(context.Background(), fleet.KindPlayer, own)
			return errors.Is(err, fleet.ErrNotFound)
		})
	}
	if twice := w.seenTwice(); len(twice) > 0 {
		t.Fatalf("seated in two rooms at once: %v", twice)
	}
}
