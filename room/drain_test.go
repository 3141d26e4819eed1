package room

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
)

// draining is the counter game with a ServerDraining packet.
type draining struct{ *counter }

func (draining) ServerDraining() Packet { return map[string]string{"type": "server_draining"} }

func TestDrainLetsRoomsFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fleettest.Start(t, 1, nil)
		s := c.Servers[0]
		g := newCounter()
		g.onStep = func(r *Room[*csim, int, *cplayer]) {
			if r.Step() == 5*60 { // the match lasts five seconds
				r.End("match over")
			}
		}
		h := newHost(t, g, Config{})
		h.UseServer(s.Fleet)
		h.UseFleet(s.Fleet)
		runHost(t, h)
		if _, err := h.OpenRoom(t.Context(), Info{ID: "m", Players: []string{"p1", "p2"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		start := time.Now()
		done := make(chan error)
		go func() { done <- s.Drain(context.Background()) }()
		synctest.Wait()
		if _, err := h.OpenRoom(t.Context(), Info{Players: []string{"p3"}}); !errors.Is(err, ErrDraining) {
			t.Fatalf("new room while draining: %v, want ErrDraining", err)
		}
		if h.RoomOf("p1") != "m" {
			t.Fatal("running room lost its players when the drain began")
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start).Round(100 * time.Millisecond); took != 4*time.Second {
			t.Errorf("drain took %v, want the 4s the match had left", took)
		}
		if got := g.lines("m"); got[len(got)-1] != "step 300 total 0" {
			t.Errorf("room did not run to its end: last line %q", got[len(got)-1])
		}
	})
}

func TestDrainTimeoutEndsRooms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fleettest.Start(t, 0, nil)
		s := c.Add(fleetConfig("a", 10*time.Second))
		h := newHost(t, draining{newCounter()}, Config{DrainGrace: 2 * time.Second})
		h.UseServer(s.Fleet)
		runHost(t, h)
		if _, err := h.OpenRoom(t.Context(), Info{ID: "endless", Players: []string{"p1"}}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := s.Drain(t.Context()); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start).Round(100 * time.Millisecond); took != 12*time.Second {
			t.Errorf("drain took %v, want the 10s timeout and the 2s grace", took)
		}
		if h.Rooms() != 0 {
			t.Errorf("%d rooms still run after the drain", h.Rooms())
		}
	})
}

func fleetConfig(id string, drain time.Duration) fleet.Config {
	return fleet.Config{NodeID: id, DrainTimeout: drain, Heartbeat: fleettest.Heartbeat}
}

func TestAbandonedRoomEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newCounter()
		h := newHost(t, g, Config{AwayTimeout: 10 * time.Second})
		runHost(t, h)
		// Seated players who never connect are away from the start.
		if _, err := h.OpenRoom(t.Context(), Info{ID: "empty-seats", Players: []string{"p1", "p2"}}); err != nil {
			t.Fatal(err)
		}
		// A room without seats (a world that runs on its own) is never
		// abandoned.
		if _, err := h.OpenRoom(t.Context(), Info{ID: "no-seats"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(9 * time.Second)
		synctest.Wait()
		if _, ok := h.Room("empty-seats"); !ok {
			t.Fatal("room ended before its players had been away for the timeout")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if _, ok := h.Room("empty-seats"); ok || h.RoomOf("p1") != "" {
			t.Fatal("room whose players were all away for the timeout still runs")
		}
		if _, ok := h.Room("no-seats"); !ok {
			t.Fatal("room without seats ended")
		}
	})
}
