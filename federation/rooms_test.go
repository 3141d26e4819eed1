package federation

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func report(id string, seq uint64, members ...string) roomRequest {
	return roomRequest{RoomReport: RoomReport{RoomID: id, Members: members, Properties: map[string]string{"mode": "duel"}}, Seq: seq}
}

func (e *env) room(id string) []string {
	e.t.Helper()
	r, err := e.home.Room(context.Background(), id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return r.Members
}

func (e *env) report(key string, req roomRequest) bool {
	e.t.Helper()
	res := e.do("POST", PathRooms, key, req)
	if res.Status != 200 {
		e.t.Fatalf("room report: %d %s", res.Status, res.Body)
	}
	var rr roomResponse
	res.decode(e.t, &rr)
	return rr.Stored
}

// TestDroppedRoomReportCorrectedByNext: snapshots, not deltas.
func TestDroppedRoomReportCorrectedByNext(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{})
	sk := e.sydneyInRotation("au:1")

	e.report(sk, report("r1", 1, "alice"))
	lost := report("r1", 2, "alice", "bob") // never arrives
	e.report(sk, report("r1", 3, "alice", "bob", "carol"))
	if got := e.room("r1"); !slices.Equal(got, []string{"alice", "bob", "carol"}) {
		t.Fatalf("after the next report: %v", got)
	}
	// The lost one turning up late changes nothing.
	if e.report(sk, lost) {
		t.Fatal("an older snapshot was stored over a newer one")
	}
	if got := e.room("r1"); !slices.Equal(got, []string{"alice", "bob", "carol"}) {
		t.Fatalf("after a late report: %v", got)
	}
	list := e.regions()
	if r := list.Regions[0]; r.Rooms != 1 || r.Players != 3 {
		t.Fatalf("counts %+v", r)
	}
	// Closing: forgotten, and a late earlier snapshot does not revive it.
	e.report(sk, roomRequest{RoomReport: RoomReport{RoomID: "r1", Closed: true}, Seq: 5})
	e.report(sk, report("r1", 4, "alice"))
	if got := e.room("r1"); got != nil {
		t.Fatalf("closed room: %v", got)
	}
	if r := e.regions().Regions[0]; r.Rooms != 0 || r.Players != 0 {
		t.Fatalf("counts after close %+v", r)
	}
}

func TestRoomHousekeeping(t *testing.T) {
	t.Parallel()
	// Rooms are reaped at the earliest allowed: after SilentAfter.
	e := newEnv(t, HomeConfig{ReapAfter: DefaultSilentAfter})
	ctx := context.Background()
	nodeKey, k1 := e.sydney()
	s2, k2 := e.join(nodeKey)
	_, k3 := e.join(nodeKey)
	e.do("POST", PathAnnounce, k1, announceRequest{Epoch: 100})
	e.announce(k2, nil)
	e.announce(k3, nil)
	e.report(k1, report("old-run", 150, "a"))
	e.report(k2, report("revoked", 1, "b"))
	e.report(k3, report("silent", 1, "c"))
	e.report(k1, roomRequest{RoomReport: RoomReport{RoomID: "closed", Closed: true}, Seq: 160})

	// A restarted agent announces a new epoch: its earlier rooms ended.
	e.do("POST", PathAnnounce, k1, announceRequest{Epoch: 200})
	if e.room("old-run") != nil {
		t.Fatal("a room of the agent's previous run survived its restart")
	}
	// A revoked server's rooms are forgotten at once.
	if err := e.home.RevokeServer(ctx, s2); err != nil {
		t.Fatal(err)
	}
	if e.room("revoked") != nil {
		t.Fatal("a revoked server's room survived")
	}
	// A dead server's rooms (silent for ReapAfter) end with it: at once for
	// joiners (Room), and in the register by the next regions list.
	for range 2 {
		e.clock.Advance(time.Minute)
		e.do("POST", PathAnnounce, k1, announceRequest{Epoch: 200})
		e.regions()
	}
	if e.room("silent") == nil {
		t.Fatal("a room of a server silent for 2m was forgotten")
	}
	if r := e.regions().Regions[0]; r.Rooms != 1 || r.Players != 1 {
		t.Fatalf("counts with the silent server's room: %+v", r)
	}
	e.clock.Advance(time.Minute)
	e.do("POST", PathAnnounce, k1, announceRequest{Epoch: 200})
	if e.room("silent") != nil {
		t.Fatal("a room of a server silent for 3m is still offered")
	}
	if r := e.regions().Regions[0]; r.Rooms != 0 || r.Players != 0 {
		t.Fatalf("counts without the dead server's room: %+v", r)
	}
	if raw, _ := e.bp.Record(ctx, collRooms, "silent"); raw != nil {
		t.Fatal("a dead server's room is still in the register after the regions list")
	}
	// Close markers last a while (so that a late report cannot revive the
	// room), at most twice SilentAfter.
	e.report(k1, roomRequest{RoomReport: RoomReport{RoomID: "closed-late", Closed: true}, Seq: 300})
	e.regions()
	if raw, _ := e.bp.Record(ctx, collRooms, "closed-late"); raw == nil {
		t.Fatal("a close marker was forgotten at once")
	}
	if e.report(k1, report("closed-late", 299, "a")) || e.room("closed-late") != nil {
		t.Fatal("a late report revived a closed room")
	}
	for range 6 {
		e.clock.Advance(time.Minute)
		e.do("POST", PathAnnounce, k1, announceRequest{Epoch: 200})
		e.regions()
	}
	if raw, _ := e.bp.Record(ctx, collRooms, "closed-late"); raw != nil {
		t.Fatal("a close marker outlived 2×SilentAfter")
	}
}
