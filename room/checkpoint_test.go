package room

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
)

// ckInterval is the checkpoint interval of these tests (on the bubble's
// clock): 60 steps at the default rate.
const ckInterval = time.Second

// ckFleet is n servers of one fleet, each with a host of a migrating
// counter game that writes checkpoints every ckInterval.
type ckFleet struct {
	servers []*fleettest.Server
	hosts   []*Host[*csim, int, *cplayer]
	games   []*migrating
}

func startCkFleet(t *testing.T, n int, cfg Config) ckFleet {
	t.Helper()
	c := fleettest.Start(t, n, nil)
	cfg.Secret = "one fleet's secret"
	if cfg.Checkpoint.Interval == 0 {
		cfg.Checkpoint.Interval = ckInterval
	}
	f := ckFleet{servers: c.Servers}
	for _, s := range c.Servers {
		g := &migrating{counter: newCounter()}
		h := newHost(t, g, cfg)
		h.UseServer(s.Fleet)
		h.UseFleet(s.Fleet)
		runHost(t, h)
		f.hosts, f.games = append(f.hosts, h), append(f.games, g)
	}
	for _, s := range c.Servers {
		for len(s.Nodes()) < n {
			time.Sleep(100 * time.Millisecond) // every record reaches every view
		}
	}
	return f
}

// stepOf returns the step of a counter line ("step N total X"), 0 for
// another line.
func stepOf(line string) uint64 {
	var step uint64
	fmt.Sscanf(line, "step %d", &step)
	return step
}

// lastStep returns the last step g logged of room id.
func lastStep(g *migrating, id string) uint64 {
	lines := g.lines(id)
	for i := len(lines) - 1; i >= 0; i-- {
		if s := stepOf(lines[i]); s > 0 {
			return s
		}
	}
	return 0
}

// TestCrashResumesRoomOnce: a server killed (its record expires, its
// checkpoint index stays) has its room resumed by exactly one of the two
// servers left, at the step of its last checkpoint, at most one interval
// behind, with the same id, its players claimed there, and Join not run
// again.
func TestCrashResumesRoomOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startCkFleet(t, 3, Config{})
		dead := f.servers[0]
		if _, err := f.hosts[0].OpenRoom(t.Context(), Info{ID: "m", Kind: "duel", Players: []string{"p1", "p2"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		pushInput(t, f.hosts[0], "m", "p1", 5)
		time.Sleep(3*ckInterval + 300*time.Millisecond)
		dead.Kill()
		atKill := lastStep(f.games[0], "m")
		// Its record expires after three heartbeats; the others look at
		// their views every heartbeat.
		time.Sleep(5 * fleettest.Heartbeat)
		synctest.Wait()

		var resumer int
		for i, h := range f.hosts[1:] {
			if _, ok := h.Room("m"); ok {
				if resumer != 0 {
					t.Fatal("room m resumed on two servers")
				}
				resumer = i + 1
			}
		}
		if resumer == 0 {
			t.Fatalf("room m resumed nowhere; stats %+v %+v", f.hosts[1].Stats().Checkpoints, f.hosts[2].Stats().Checkpoints)
		}
		g := f.games[resumer]
		lines := g.lines("m")
		first := stepOf(lines[0])
		if first == 0 || first > atKill+1 {
			t.Fatalf("resumed room's first line %q; the dead server was at step %d", lines[0], atKill)
		}
		if lost := atKill + 1 - first; lost > uint64(ckInterval/time.Second)*60 {
			t.Errorf("resumed at step %d, the dead server was at %d: %d steps lost, over one interval (60)", first, atKill, lost)
		}
		if !strings.HasSuffix(lines[0], "total 5") {
			t.Errorf("resumed room's first line %q, want the input's total 5", lines[0])
		}
		for _, l := range lines {
			if strings.HasPrefix(l, "join") {
				t.Errorf("the resumer ran %q", l)
			}
		}
		s := f.servers[resumer]
		if !s.Holds(fleet.KindPlayer, "p1") || !s.Holds(fleet.KindPlayer, "p2") {
			t.Error("the resumer does not hold the room's players")
		}
		if got := f.hosts[resumer].RoomOf("p1"); got != "m" {
			t.Errorf("p1 seated in %q on the resumer, want m", got)
		}
		var resumed uint64
		for _, h := range f.hosts[1:] {
			resumed += h.Stats().Checkpoints.Resumed
		}
		if resumed != 1 {
			t.Errorf("%d rooms resumed in all, want 1", resumed)
		}
		if st := f.hosts[0].Stats().Checkpoints; st.Written < 3 || st.Bytes == 0 {
			t.Errorf("the dead server's checkpoint stats %+v, want one written per interval, with their bytes", st)
		}
	})
}

// TestResumeTakesCheckpointOnce: two servers racing for one checkpoint
// (as when their views of the fleet differ), beside their own watches of
// the view: one resumes the room, the others find none.
func TestResumeTakesCheckpointOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startCkFleet(t, 3, Config{})
		if _, err := f.hosts[0].OpenRoom(t.Context(), Info{ID: "m", Players: []string{"p1"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * ckInterval)
		f.servers[0].Kill()
		dead := f.servers[0].ID()
		for f.hosts[1].viewIDs()[dead] || f.hosts[2].viewIDs()[dead] {
			time.Sleep(10 * time.Millisecond) // until its record expired
		}
		errs := make(chan error, 2)
		for _, h := range f.hosts[1:] {
			go func() { errs <- h.resumeRoom(t.Context(), h.checkpointStore(), dead, "m") }()
		}
		for range 2 {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		synctest.Wait() // a watcher's resume in flight ends
		n := 0
		for _, h := range f.hosts[1:] {
			if _, ok := h.Room("m"); ok {
				n++
			}
		}
		if n != 1 {
			t.Errorf("room resumed on %d servers, want 1; stats %+v, %+v, %+v", n, f.hosts[0].Stats().Checkpoints, f.hosts[1].Stats().Checkpoints, f.hosts[2].Stats().Checkpoints)
		}
	})
}

// TestEndedRoomLeavesNoCheckpoint: a room's checkpoint is listed in its
// server's index while it runs; once it ends, its checkpoint is dropped
// and the index no longer lists it.
func TestEndedRoomLeavesNoCheckpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startCkFleet(t, 2, Config{})
		h, s := f.hosts[0], f.servers[0]
		for _, id := range []string{"m", "n"} {
			if _, err := h.OpenRoom(t.Context(), Info{ID: id, Players: []string{"p-" + id}}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * ckInterval)
		ix, err := s.CheckpointIndexOf(t.Context(), s.ID())
		if err != nil || strings.Join(ix.IDs, ",") != "m,n" {
			t.Fatalf("index %+v, %v; want m and n", ix, err)
		}
		r, _ := h.Room("m")
		r.End("match over")
		time.Sleep(2 * ckInterval)
		if ix, err = s.CheckpointIndexOf(t.Context(), s.ID()); err != nil || strings.Join(ix.IDs, ",") != "n" {
			t.Errorf("index %+v, %v after m ended; want n alone", ix, err)
		}
		if _, err := s.TakeCheckpoint(t.Context(), s.ID(), "m"); !errors.Is(err, fleet.ErrNotFound) {
			t.Errorf("checkpoint of the ended room: %v, want ErrNotFound", err)
		}
		if _, err := s.TakeCheckpoint(t.Context(), s.ID(), "n"); err != nil {
			t.Errorf("checkpoint of the running room: %v", err)
		}
	})
}

// TestDrainRemovesCheckpointIndex: a draining server removes its index
// before it moves its rooms, so that nobody resumes them once it leaves.
func TestDrainRemovesCheckpointIndex(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startCkFleet(t, 2, Config{})
		if _, err := f.hosts[0].OpenRoom(t.Context(), Info{ID: "m", Players: []string{"p1"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * ckInterval)
		s := f.servers[0]
		f.hosts[0].stopCheckpoints(t.Context()) // what the host's drain does first
		if _, err := s.CheckpointIndexOf(t.Context(), s.ID()); !errors.Is(err, fleet.ErrNotFound) {
			t.Errorf("index after the drain began: %v, want ErrNotFound", err)
		}
		s.Kill()
		time.Sleep(5 * fleettest.Heartbeat)
		if _, ok := f.hosts[1].Room("m"); ok {
			t.Error("room of a drained server resumed")
		}
	})
}

// TestOversizedCheckpointSkipped: a snapshot over migrate.max-bytes is
// not written, and counted.
func TestOversizedCheckpointSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startCkFleet(t, 2, Config{Migrate: Migrate{MaxBytes: 64}})
		if _, err := f.hosts[0].OpenRoom(t.Context(), Info{ID: "m", Players: []string{"p1"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2*ckInterval + 100*time.Millisecond)
		st := f.hosts[0].Stats().Checkpoints
		if st.Written != 0 || st.Bytes != 0 || st.Skipped < 2 {
			t.Errorf("stats %+v, want none written and one skipped per interval", st)
		}
		s := f.servers[0]
		if _, err := s.TakeCheckpoint(t.Context(), s.ID(), "m"); !errors.Is(err, fleet.ErrNotFound) {
			t.Errorf("checkpoint over the bound: %v, want ErrNotFound", err)
		}
	})
}

// TestForeignCheckpointRefused: a checkpoint signed with another fleet's
// key, a move's snapshot, one of another server, an expired one or a
// changed one is refused; the room is not resumed and the refusal counted.
func TestForeignCheckpointRefused(t *testing.T) {
	now := time.Now()
	ck := &snapshot{V: snapshotVersion, From: "dead", Expires: now.Add(time.Second).UnixMilli(), ID: "m",
		Seats: []seatSnapshot{{ID: "p1"}}, Game: []byte(`{"total":1}`)}
	key := snapshotKey("this fleet")
	sealed, err := sealSnapshot(key, ck)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openCheckpoint(key, sealed, "dead", now); err != nil {
		t.Fatalf("checkpoint of this fleet refused: %v", err)
	}
	foreign, _ := sealSnapshot(snapshotKey("another fleet"), ck)
	move := *ck
	move.To = "b"
	moveSealed, _ := sealSnapshot(key, &move)
	for name, check := range map[string]func() error{
		"of another fleet":  func() error { _, err := openCheckpoint(key, foreign, "dead", now); return err },
		"a move's snapshot": func() error { _, err := openCheckpoint(key, moveSealed, "dead", now); return err },
		"of another server": func() error { _, err := openCheckpoint(key, sealed, "other", now); return err },
		"of no server":      func() error { _, err := openCheckpoint(key, sealed, "", now); return err },
		"expired":           func() error { _, err := openCheckpoint(key, sealed, "dead", now.Add(2*time.Second)); return err },
		"as a move":         func() error { _, err := openSnapshot(key, sealed, "", now); return err },
		"changed": func() error {
			_, err := openCheckpoint(key, []byte(strings.Replace(string(sealed), `"id":"m"`, `"id":"n"`, 1)), "dead", now)
			return err
		},
	} {
		if err := check(); !errors.Is(err, ErrSnapshot) {
			t.Errorf("checkpoint %s: %v, want ErrSnapshot", name, err)
		}
	}

	synctest.Test(t, func(t *testing.T) {
		f := startCkFleet(t, 2, Config{})
		s, h := f.servers[0], f.hosts[1]
		ck.Expires = time.Now().Add(time.Minute).UnixMilli()
		ck.From = s.ID()
		foreign, _ := sealSnapshot(snapshotKey("another fleet"), ck)
		if err := s.PutCheckpoint(t.Context(), "m", foreign, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := h.resumeRoom(t.Context(), h.checkpointStore(), s.ID(), "m"); !errors.Is(err, ErrSnapshot) {
			t.Errorf("resume of another fleet's checkpoint: %v, want ErrSnapshot", err)
		}
		if _, ok := h.Room("m"); ok {
			t.Error("another fleet's room resumed")
		}
		if f.servers[1].Holds(fleet.KindPlayer, "p1") {
			t.Error("a refused room's player claimed")
		}
		if st := h.Stats().Checkpoints; st.Refused != 1 || st.Resumed != 0 {
			t.Errorf("stats %+v, want one refused", st)
		}
	})
}

// TestCheckpointNeedsMigrator: an interval for a game without Migrator is
// refused by New, naming the key and its variable.
func TestCheckpointNeedsMigrator(t *testing.T) {
	_, err := New(newCounter(), Config{Checkpoint: Checkpoint{Interval: time.Second}}, quietLog)
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "muster.room.checkpoint.interval (MUSTER__ROOM__CHECKPOINT__INTERVAL)") {
		t.Errorf("New: %v, want ErrConfig naming muster.room.checkpoint.interval", err)
	}
	if _, err := New(newCounter(), Config{}, quietLog); err != nil {
		t.Errorf("New without checkpoints: %v", err)
	}
}
