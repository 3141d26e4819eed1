package room

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
)

// migrating is the counter game with a Migrator: its snapshot is the
// total and the players' ids.
type migrating struct {
	*counter
	ended   atomic.Int32 // RoomEnded calls
	refuse  bool         // Restore refuses every snapshot
	panicky bool         // Snapshot panics
}

type migratingSnap struct {
	Total   int      `json:"total"`
	Players []string `json:"players"`
}

func (g *migrating) Snapshot(r *Room[*csim, int, *cplayer]) ([]byte, error) {
	if g.panicky {
		panic("no snapshot today")
	}
	return json.Marshal(migratingSnap{Total: r.Sim().total, Players: r.Players()})
}

func (g *migrating) Restore(_ Info, data []byte) (*csim, map[string]*cplayer, error) {
	if g.refuse {
		return nil, nil, errors.New("not today")
	}
	var s migratingSnap
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, nil, err
	}
	players := make(map[string]*cplayer, len(s.Players))
	for _, id := range s.Players {
		players[id] = &cplayer{id: id}
	}
	return &csim{total: s.Total}, players, nil
}

func (g *migrating) RoomEnded(*Room[*csim, int, *cplayer], string) { g.ended.Add(1) }

// movePair is two servers, a and b, of one fleet, each with a host of its
// game, whose moves go straight from host to host (no HTTP in a bubble).
type movePair struct {
	a, b   *fleettest.Server
	ha, hb *Host[*csim, int, *cplayer]
}

func startMovePair(t *testing.T, ga, gb Game[*csim, int, *cplayer], cfg Config) movePair {
	t.Helper()
	c := fleettest.Start(t, 2, func(_ int, fc *fleet.Config) { fc.DrainTimeout = time.Minute })
	p := movePair{a: c.Servers[0], b: c.Servers[1]}
	cfg.Secret = "one fleet's secret"
	p.ha, p.hb = newHost(t, ga, cfg), newHost(t, gb, cfg)
	hosts := map[string]*Host[*csim, int, *cplayer]{p.a.ID(): p.ha, p.b.ID(): p.hb}
	for s, h := range map[*fleettest.Server]*Host[*csim, int, *cplayer]{p.a: p.ha, p.b: p.hb} {
		h.UseServer(s.Fleet)
		h.UseFleet(s.Fleet)
		h.sendRoom = func(ctx context.Context, to fleet.Node, sealed []byte) error {
			return hosts[to.ID].receiveRoom(ctx, sealed)
		}
		runHost(t, h)
	}
	for !slices.ContainsFunc(p.a.Nodes(), func(n fleet.Node) bool { return n.ID == p.b.ID() && n.HasRoom() }) {
		time.Sleep(100 * time.Millisecond) // b's ready record reaches a's view
	}
	return p
}

// pushInput queues input in for player id of room id on h, as its
// connection would.
func pushInput(t *testing.T, h *Host[*csim, int, *cplayer], room, id string, in int) {
	t.Helper()
	r, ok := h.Room(room)
	if !ok || !r.push(event[int]{kind: evInput, id: id, input: in}) {
		t.Fatalf("room %s is not running", room)
	}
}

func TestDrainMovesRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ga, gb := &migrating{counter: newCounter()}, &migrating{counter: newCounter()}
		p := startMovePair(t, ga, gb, Config{})
		if _, err := p.ha.OpenRoom(t.Context(), Info{ID: "m", Kind: "duel", Players: []string{"p1", "p2"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		pushInput(t, p.ha, "m", "p1", 5)
		time.Sleep(time.Second)
		if err := p.a.Drain(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // b steps the room on

		if n := p.ha.Rooms(); n != 0 {
			t.Errorf("%d rooms left on a", n)
		}
		if got := p.hb.RoomOf("p1"); got != "m" {
			t.Fatalf("p1 is in room %q on b, want m", got)
		}
		r, _ := p.hb.Room("m")
		if r.Info().Kind != "duel" {
			t.Errorf("moved room's kind %q, want duel", r.Info().Kind)
		}
		la, lb := ga.lines("m"), gb.lines("m")
		var lastA uint64
		fmt.Sscanf(la[len(la)-1], "step %d", &lastA)
		if want := fmt.Sprintf("step %d total 5", lastA+1); len(lb) == 0 || lb[0] != want {
			t.Errorf("b's first line %q, want %q (the step after a's last, %q)", first(lb), want, la[len(la)-1])
		}
		for _, l := range lb {
			if strings.HasPrefix(l, "join") {
				t.Errorf("b ran %q: a moved player joins again", l)
			}
		}
		if ga.ended.Load() != 0 {
			t.Error("the game's RoomEnded ran on a for a room that moved")
		}
		if !p.b.Holds(fleet.KindPlayer, "p1") || !p.b.Holds(fleet.KindPlayer, "p2") {
			t.Error("b does not hold the moved players' claims")
		}
		if st := p.ha.Stats().Moves; st.Moved != 1 || st.Pause.Count != 1 || st.Failed != 0 {
			t.Errorf("a's move stats %+v, want one room moved with its pause", st)
		}
		if st := p.hb.Stats().Moves; st.Received != 1 {
			t.Errorf("b's move stats %+v, want one room received", st)
		}
	})
}

func first(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[0]
}

func TestDrainWithMovableRoomsEndsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := startMovePair(t, &migrating{counter: newCounter()}, &migrating{counter: newCounter()}, Config{})
		for i := range 40 {
			if _, err := p.ha.OpenRoom(t.Context(), Info{Players: []string{fmt.Sprintf("p%d", i)}}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
		start := time.Now()
		if err := p.a.Drain(t.Context()); err != nil {
			t.Fatal(err)
		}
		// On the bubble's clock: the moves take a pass each, the drain's
		// timeout is a minute.
		if took := time.Since(start); took >= time.Minute/2 {
			t.Errorf("drain took %v with every room movable", took)
		}
		if n := p.hb.Rooms(); n != 40 {
			t.Errorf("%d rooms on b, want the 40 moved; a: %+v", n, p.ha.Stats().Moves)
		}
	})
}

func TestRoomThatCannotMoveStays(t *testing.T) {
	tests := []struct {
		name string
		ga   *migrating
		gb   *migrating
		cfg  Config
	}{
		{name: "target refuses", ga: &migrating{}, gb: &migrating{refuse: true}},
		{name: "snapshot panics", ga: &migrating{panicky: true}, gb: &migrating{}},
		{name: "too large", ga: &migrating{}, gb: &migrating{}, cfg: Config{Migrate: Migrate{MaxBytes: 64}}},
		{name: "disabled", ga: &migrating{}, gb: &migrating{}, cfg: Config{Migrate: Migrate{Disabled: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tt.ga.counter, tt.gb.counter = newCounter(), newCounter()
				tt.ga.onStep = func(r *Room[*csim, int, *cplayer]) {
					if r.Step() == 10*60 {
						r.End("match over")
					}
				}
				p := startMovePair(t, tt.ga, tt.gb, tt.cfg)
				if _, err := p.ha.OpenRoom(t.Context(), Info{ID: "m", Players: []string{"p1"}}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Second)
				if err := p.a.Drain(t.Context()); err != nil {
					t.Fatal(err)
				}
				if got := tt.ga.lines("m"); got[len(got)-1] != "step 600 total 0" {
					t.Errorf("the room did not finish on a: last line %q", got[len(got)-1])
				}
				if n := p.hb.Rooms(); n != 0 {
					t.Errorf("%d rooms on b", n)
				}
				if tt.ga.ended.Load() != 1 {
					t.Errorf("RoomEnded ran %d times on a, want once", tt.ga.ended.Load())
				}
			})
		})
	}
}

func TestSnapshotOfAnotherFleetRefused(t *testing.T) {
	now := time.Now()
	s := &snapshot{V: snapshotVersion, To: "b", Expires: now.Add(time.Second).UnixMilli(), ID: "m", Seats: []seatSnapshot{{ID: "p1"}}}
	sealed, err := sealSnapshot(snapshotKey("another fleet"), s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openSnapshot(snapshotKey("this fleet"), sealed, "b", now); !errors.Is(err, ErrSnapshot) {
		t.Errorf("snapshot signed with another key: %v, want ErrSnapshot", err)
	}
	key := snapshotKey("this fleet")
	sealed, _ = sealSnapshot(key, s)
	if _, err := openSnapshot(key, sealed, "b", now); err != nil {
		t.Errorf("snapshot of this fleet refused: %v", err)
	}
	for name, check := range map[string]func() error{
		"for another server": func() error { _, err := openSnapshot(key, sealed, "c", now); return err },
		"expired":            func() error { _, err := openSnapshot(key, sealed, "b", now.Add(2*time.Second)); return err },
		"changed": func() error {
			bad := []byte(strings.Replace(string(sealed), `"id":"m"`, `"id":"n"`, 1))
			_, err := openSnapshot(key, bad, "b", now)
			return err
		},
	} {
		if err := check(); !errors.Is(err, ErrSnapshot) {
			t.Errorf("snapshot %s: %v, want ErrSnapshot", name, err)
		}
	}
}

// FuzzRestoreSnapshot restores snapshots of any content signed with the
// fleet's key (a server of the fleet that is buggy or of another version)
// and of any bytes at all (anyone else), as a move's and as a checkpoint
// of server "a": each is refused with ErrSnapshot or restored, never a
// panic.
func FuzzRestoreSnapshot(f *testing.F) {
	at := time.Unix(1000, 0)
	good, _ := json.Marshal(&snapshot{V: snapshotVersion, To: "b", Expires: at.Add(time.Second).UnixMilli(), ID: "m",
		Seats: []seatSnapshot{{ID: "p1", Joined: true}, {ID: "p2"}}, Game: []byte(`{"total":3,"players":["p1"]}`)})
	f.Add(good, true)
	f.Add([]byte(`{"v":1,"to":"b","expires":2000000,"id":"m","seats":[{"id":"p1","joined":true}],"game":"bnVsbA=="}`), true)
	f.Add([]byte("0000\n{}"), false)
	ck, _ := json.Marshal(&snapshot{V: snapshotVersion, From: "a", Expires: at.Add(time.Second).UnixMilli(), ID: "m",
		Seats: []seatSnapshot{{ID: "p1", Joined: true}}, Game: []byte(`{"total":3,"players":["p1"]}`)})
	f.Add(ck, true)
	h, err := New[*csim, int, *cplayer](&migrating{counter: newCounter()}, Config{Secret: "fuzz"}, quietLog)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, signed bool) {
		sealed := body
		if signed {
			sealed = sealBody(h.moveKey, body)
		}
		if s, err := openCheckpoint(h.moveKey, sealed, "a", at); err == nil {
			if _, _, err := h.restoreRoom(s); err != nil && !errors.Is(err, ErrSnapshot) {
				t.Fatalf("checkpoint refusal %v does not wrap ErrSnapshot", err)
			}
		} else if !errors.Is(err, ErrSnapshot) {
			t.Fatalf("checkpoint refusal %v does not wrap ErrSnapshot", err)
		}
		r, ids, err := h.buildRoom(sealed, "b", at)
		if err != nil {
			if !errors.Is(err, ErrSnapshot) {
				t.Fatalf("refusal %v does not wrap ErrSnapshot", err)
			}
			return
		}
		if r.sim == nil || len(ids) != len(r.seats) {
			t.Fatalf("restored room with sim %v and %d seats for %d ids", r.sim, len(r.seats), len(ids))
		}
	})
}

// sealBody signs body as sealSnapshot signs a snapshot's JSON.
func sealBody(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return append(append(hex.AppendEncode(nil, m.Sum(nil)), '\n'), body...)
}
