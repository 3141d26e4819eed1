package federation

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

// seedAnnounce is the announce body exactly as the federation seed shows it.
const seedAnnounce = `{"services":{"photon":"203.0.113.9:22002","turn":"203.0.113.9:3478","stun":"203.0.113.9:3478"}}`

// TestSeedAnnounceBody: a node that announces exactly as the seed shows is
// listed and gets rooms (photon is a game server) and relays.
func TestSeedAnnounceBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{})
	_, sk := e.sydney()
	e.selfTest(sk)
	if res := e.do("POST", PathAnnounce, sk, seedAnnounce); res.Status != http.StatusOK {
		t.Fatalf("the seed's announce: %d %s", res.Status, res.Body)
	}
	list := e.regions()
	if len(list.Regions) != 1 || !slices.Equal(list.Regions[0].Services[ServicePhoton], []string{"203.0.113.9:22002"}) {
		t.Fatalf("regions %+v", list.Regions)
	}
	p := newPlacerFor(t, e, PlacerConfig{})
	p.step(context.Background(), e.clock.Now())
	if got := p.Place(RoomInfo{ID: "r1"}, "AU"); got != (Placement{Node: "au-sydney", Address: "203.0.113.9:22002"}) {
		t.Fatalf("a room of an AU player is placed at %+v", got)
	}
	ice := p.ICEServers("AU", "p1")
	if len(ice) != 2 || !slices.Equal(ice[0].URLs, []string{"stun:203.0.113.9:3478"}) || !slices.Equal(ice[1].URLs, []string{"turn:203.0.113.9:3478"}) {
		t.Fatalf("ICE servers %+v", ice)
	}
}

// TestPlacementThirds: three nodes named alike each get a third of the
// rooms (FNV-1a without a final mix gave node-1..3 50/25/25).
func TestPlacementThirds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{})
	for i := 1; i <= 3; i++ {
		e.inRotation(e.createNode(fmt.Sprintf("node-%d", i), "AU", true),
			map[string]string{ServiceGame: fmt.Sprintf("10.0.0.%d:7000", i), ServiceTURN: fmt.Sprintf("10.0.0.%d:3478", i)})
	}
	p := newPlacerFor(t, e, PlacerConfig{})
	p.step(context.Background(), e.clock.Now())
	const rooms = 6000
	got := map[string]int{}
	for i := range rooms {
		got[p.Place(RoomInfo{ID: fmt.Sprintf("room-%d", i)}, "AU").Node]++
	}
	// And the players of a country with three TURN nodes, which are
	// ranked by player and node id alone.
	turn := map[string]int{}
	for i := range rooms {
		ice := p.ICEServers("AU", fmt.Sprintf("player-%d", i))
		turn[ice[len(ice)-1].URLs[0]]++
	}
	for i := 1; i <= 3; i++ {
		n := fmt.Sprintf("node-%d", i)
		if share := float64(got[n]) / rooms; share < 0.30 || share > 0.37 {
			t.Errorf("%s got %.1f%% of the rooms: %v", n, 100*share, got)
		}
		u := fmt.Sprintf("turn:10.0.0.%d:3478", i)
		if share := float64(turn[u]) / rooms; share < 0.30 || share > 0.37 {
			t.Errorf("%s got %.1f%% of the players' relays: %v", n, 100*share, turn)
		}
	}
}

// TestBackoffJitter: retries back off from 1s to the limit, each drawn
// from the upper half of its step, so nodes do not retry in step.
func TestBackoffJitter(t *testing.T) {
	t.Parallel()
	for n, step := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute, time.Minute} {
		seen := map[time.Duration]bool{}
		for range 100 {
			d := backoff(n, time.Minute)
			if d < step/2 || d > step {
				t.Fatalf("backoff(%d) = %v, want %v to %v", n, d, step/2, step)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Fatalf("backoff(%d): %d distinct waits in 100", n, len(seen))
		}
	}
	if d := backoff(1000, time.Minute); d < 30*time.Second || d > time.Minute {
		t.Fatalf("backoff(1000) = %v", d)
	}
}

// seedReport is a room report as the seed describes it — the whole room,
// who is in it and its properties — with nothing of Muster's own (no seq,
// no node id), as a game server that is not Muster sends it.
const seedReport = `{"room_id":"home-room-7","members":["alice","bob"],"properties":{"map":"dunes","mode":"coop"}}`

// TestSeedReportBody: after the seed's announce, the seed's room report is
// stored as written; reports without seq are ordered by arrival, and a
// closing one ends the room.
func TestSeedReportBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{})
	_, sk := e.sydney()
	e.selfTest(sk)
	if res := e.do("POST", PathAnnounce, sk, seedAnnounce); res.Status != http.StatusOK {
		t.Fatalf("the seed's announce: %d %s", res.Status, res.Body)
	}
	if res := e.do("POST", PathRooms, sk, seedReport); res.Status != http.StatusOK {
		t.Fatalf("the seed's report: %d %s", res.Status, res.Body)
	}
	ctx := context.Background()
	r, err := e.home.Room(ctx, "home-room-7")
	if err != nil || !slices.Equal(r.Members, []string{"alice", "bob"}) || r.Properties["map"] != "dunes" || r.Properties["mode"] != "coop" {
		t.Fatalf("the seed's room at home: %+v %v", r, err)
	}
	if res := e.do("POST", PathRooms, sk, `{"room_id":"home-room-7","members":["alice"],"properties":{"map":"dunes"}}`); res.Status != http.StatusOK {
		t.Fatalf("a second report: %d %s", res.Status, res.Body)
	}
	if r, _ := e.home.Room(ctx, "home-room-7"); !slices.Equal(r.Members, []string{"alice"}) || r.Properties["mode"] != "" {
		t.Fatalf("after the second report: %+v", r)
	}
	if res := e.do("POST", PathRooms, sk, `{"room_id":"home-room-7","closed":true}`); res.Status != http.StatusOK {
		t.Fatalf("the closing report: %d %s", res.Status, res.Body)
	}
	if _, err := e.home.Room(ctx, "home-room-7"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a closed room: %v", err)
	}
}
