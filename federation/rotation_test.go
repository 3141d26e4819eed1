package federation

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"
)

// newPlacerFor returns a Placer polling e's home in process.
func newPlacerFor(t *testing.T, e *env, cfg PlacerConfig) *Placer {
	t.Helper()
	cfg.HomeURL = "http://home.test"
	cfg.HTTPClient = client(e.h)
	cfg.Now = e.clock.Now
	if cfg.HomeServices == nil {
		cfg.HomeServices = map[string]string{ServiceGame: "home.example:443", ServiceTURN: "home.example:3478", ServiceSTUN: "home.example:3478"}
	}
	p, err := NewPlacer(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSilentServerLeavesRotation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{})
	ctx := context.Background()
	node := "wss://au.example/play"
	sk := e.sydneyInRotation(node)
	placer := newPlacerFor(t, e, PlacerConfig{})
	placer.step(ctx, e.clock.Now())

	newRoom := RoomInfo{ID: "r-new"}
	if got := placer.Place(newRoom, "AU"); got.Node != "au-sydney" || got.Address != node {
		t.Fatalf("before silence: %+v", got)
	}
	// A room placed there, with players in it, reported by the node.
	running := RoomInfo{ID: "r-running", Members: 2, Placement: Placement{Node: "au-sydney", Address: node}}
	e.do("POST", PathRooms, sk, roomRequest{RoomReport: RoomReport{RoomID: "r-running", Members: []string{"a", "b"}}, Seq: 1})

	// Silent for just under 3 minutes: still in rotation.
	e.clock.Advance(3*time.Minute - time.Second)
	if got := regionNodes(e.regions()); !slices.Equal(got, []string{"au-sydney"}) {
		t.Fatalf("at 2m59s: %v", got)
	}
	// Silent for 3 minutes: out of the regions list.
	e.clock.Advance(time.Second)
	if got := regionNodes(e.regions()); len(got) != 0 {
		t.Fatalf("at 3m: %v", got)
	}
	// The placer has not polled yet; within one more poll it stops.
	placer.step(ctx, e.clock.Now())
	if got := placer.Place(newRoom, "AU"); !got.Home() || got.Address != "home.example:443" {
		t.Fatalf("after the next poll a new room goes to %+v, want home", got)
	}
	// A room placed there stays where it is (TestSilentServerRoomsGoOn).
	if got := placer.Place(running, "FR"); got != running.Placement {
		t.Fatalf("running room moved to %+v", got)
	}
	// Announcing again brings the node back at the next poll.
	e.announce(sk, map[string]string{ServiceGame: node})
	placer.step(ctx, e.clock.Now())
	if got := placer.Place(newRoom, "AU"); got.Node != "au-sydney" {
		t.Fatalf("after announcing again: %+v", got)
	}
}

func TestSiblingKeepsNodeInRotation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{})
	key, k1 := e.sydney()
	_, k2 := e.join(key)
	e.announce(k1, map[string]string{ServiceGame: "a:1"})
	e.clock.Advance(2 * time.Minute)
	e.announce(k2, map[string]string{ServiceGame: "b:1"})
	e.clock.Advance(time.Minute + time.Second) // k1 silent 3m1s, k2 1m1s
	list := e.regions()
	if len(list.Regions) != 1 || list.Regions[0].Servers != 1 || !slices.Equal(list.Regions[0].Services[ServiceGame], []string{"b:1"}) {
		t.Fatalf("regions %+v", list.Regions)
	}
}

func TestSelfTestSchedule(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{})
	_, sk := e.sydney()
	a := e.announce(sk, nil)
	if a.SelfTest.DueInSeconds > 0 || a.SelfTest.Bytes != DefaultSelfTestBytes {
		t.Fatalf("a new server's self-test is not due at once: %+v", a.SelfTest)
	}
	// Due since joining; within the grace the server still counts.
	e.clock.Advance(DefaultSelfTestGrace)
	if a := e.announce(sk, nil); !a.Fresh {
		t.Fatal("not fresh within the self-test grace")
	}
	// Past the grace it is treated like a silent server, announces or not.
	e.clock.Advance(time.Second)
	if a := e.announce(sk, nil); a.Fresh {
		t.Fatal("fresh with an overdue self-test")
	}
	if got := regionNodes(e.regions()); len(got) != 0 {
		t.Fatalf("node with an overdue self-test in regions: %v", got)
	}
	// An incomplete upload fails and leaves the test due.
	res := e.do("POST", PathSelfTest, sk, make([]byte, 100))
	var failed selfTestResponse
	res.decode(t, &failed)
	if failed.Passed || failed.NextDueInSeconds > 0 {
		t.Fatalf("short upload: %+v", failed)
	}
	// A passing test brings it back and sets the next one a day later.
	st := e.selfTest(sk)
	if !st.Passed || st.NextDueInSeconds != DefaultSelfTestEvery.Seconds() {
		t.Fatalf("self-test %+v", st)
	}
	if got := regionNodes(e.regions()); !slices.Equal(got, []string{"au-sydney"}) {
		t.Fatalf("regions after the self-test: %v", got)
	}
	// A day and the grace later (announcing all along) it is due but
	// within the grace; a second more and it is overdue.
	e.clock.Advance(DefaultSelfTestEvery + DefaultSelfTestGrace)
	if a := e.announce(sk, nil); !a.Fresh {
		t.Fatal("not fresh within the grace of the next self-test")
	}
	e.clock.Advance(time.Second)
	if a := e.announce(sk, nil); a.Fresh {
		t.Fatal("fresh 25h after the last self-test")
	}
	n, err := e.home.Node(context.Background(), "au-sydney")
	if err != nil || n.InRotation || n.Servers[0].SelfTest == nil || !n.Servers[0].SelfTest.Passed {
		t.Fatalf("node %+v %v", n, err)
	}
}

func TestMinBandwidth(t *testing.T) {
	t.Parallel()
	// No upload in process reaches an exabyte per second.
	e := newEnv(t, HomeConfig{MinBandwidth: 1e18, SelfTestBytes: 1024})
	_, sk := e.sydney()
	if st := e.selfTest(sk); st.Passed || st.Bytes != 1024 {
		t.Fatalf("self-test below the minimum: %+v", st)
	}
}

func TestPlacerKeepsListUntilStale(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{})
	ctx := context.Background()
	sk := e.sydneyInRotation("a:1")
	fail := false
	p := newPlacerFor(t, e, PlacerConfig{})
	p.cfg.HTTPClient = &http.Client{Transport: handlerTransport{h: e.h, drop: func(*http.Request) bool { return fail }}}
	p.step(ctx, e.clock.Now())
	fail = true
	for range 3 {
		e.clock.Advance(time.Minute)
		e.announce(sk, map[string]string{ServiceGame: "a:1"})
		p.step(ctx, e.clock.Now())
		if got := p.Place(RoomInfo{ID: "x"}, "AU"); got.Node != "au-sydney" {
			t.Fatalf("with a list %v old: %+v", e.clock.Now().Sub(p.fetchedAt), got)
		}
	}
	e.clock.Advance(time.Second)
	p.step(ctx, e.clock.Now())
	if got := p.Place(RoomInfo{ID: "x"}, "AU"); !got.Home() {
		t.Fatalf("with a stale list: %+v", got)
	}
}

// TestSilentServerRoomsGoOn: a silent server's node leaves rotation, but
// its rooms go on at home — found, counted, reported — until they end, the
// node is revoked, or the server has been silent for ReapAfter.
func TestSilentServerRoomsGoOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{})
	ctx := context.Background()
	sk := e.sydneyInRotation("wss://au.example/play")
	report := func(roomID string, seq uint64, members ...string) response {
		return e.do("POST", PathRooms, sk, roomRequest{RoomReport: RoomReport{RoomID: roomID, Members: members}, Seq: seq})
	}
	report("r-running", 1, "a", "b")
	report("r-ending", 2, "c")

	e.clock.Advance(3 * time.Minute) // silent: out of rotation
	if got := regionNodes(e.regions()); len(got) != 0 {
		t.Fatalf("regions of a silent node: %v", got)
	}
	if r, err := e.home.Room(ctx, "r-running"); err != nil || !slices.Equal(r.Members, []string{"a", "b"}) {
		t.Fatalf("a silent server's room: %+v %v", r, err)
	}
	if res := report("r-running", 3, "a", "b", "d"); res.Status != http.StatusOK {
		t.Fatalf("report from a silent server: %d %s", res.Status, res.Body)
	}
	if r, err := e.home.Room(ctx, "r-running"); err != nil || len(r.Members) != 3 {
		t.Fatalf("a silent server's room after its report: %+v %v", r, err)
	}
	if res := e.do("POST", PathRooms, sk, roomRequest{RoomReport: RoomReport{RoomID: "r-ending", Closed: true}, Seq: 4}); res.Status != http.StatusOK {
		t.Fatalf("close report from a silent server: %d %s", res.Status, res.Body)
	}
	if _, err := e.home.Room(ctx, "r-ending"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an ended room: %v", err)
	}
	n, err := e.home.Node(ctx, "au-sydney")
	if err != nil || n.InRotation || len(n.Servers) != 1 || n.Servers[0].Rooms != 1 || n.Servers[0].Players != 3 {
		t.Fatalf("the silent node: %+v %v", n, err)
	}

	// Silent for ReapAfter: its rooms are taken as abandoned.
	e.clock.Advance(DefaultReapAfter - 3*time.Minute)
	e.regions()
	if _, err := e.home.Room(ctx, "r-running"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a room of a server silent for ReapAfter: %v", err)
	}
	if raw, _ := e.bp.Record(ctx, collRooms, "r-running"); raw != nil {
		t.Fatalf("a reaped room is still in the register: %s", raw)
	}
	if res := report("r-running", 5, "a"); res.Status != http.StatusConflict || res.code(t) != "not_announced" {
		t.Fatalf("report after ReapAfter: %d %s", res.Status, res.Body)
	}
}

// TestRevokedNodeRoomsEnd: revoking a silent server's node ends its rooms
// at once.
func TestRevokedNodeRoomsEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{})
	ctx := context.Background()
	sk := e.sydneyInRotation("wss://au.example/play")
	e.do("POST", PathRooms, sk, roomRequest{RoomReport: RoomReport{RoomID: "r1", Members: []string{"a"}}, Seq: 1})
	e.clock.Advance(5 * time.Minute)
	if _, err := e.home.Room(ctx, "r1"); err != nil {
		t.Fatalf("a silent server's room: %v", err)
	}
	if err := e.home.RevokeNode(ctx, "au-sydney"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.home.Room(ctx, "r1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a revoked node's room: %v", err)
	}
}
