package matchmaking

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/muster-gg/muster/fleet"
)

type waiter struct {
	id     string
	rating float64
	waited time.Duration
}

func TestMatch(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	cases := []struct {
		name    string
		pl      Playlist
		waiters []waiter
		seats   int          // the most players matched; 0 = no limit
		want    [][][]string // matches → teams → ids
		left    int
	}{
		{
			name:    "duel in waiting order",
			pl:      Playlist{Name: "duel"},
			waiters: []waiter{{"c", 0, 1 * time.Second}, {"a", 0, 3 * time.Second}, {"e", 0, 0}, {"b", 0, 2 * time.Second}, {"d", 0, 1 * time.Second}},
			want:    [][][]string{{{"a"}, {"b"}}, {{"c"}, {"d"}}},
			left:    1,
		},
		{
			name:    "duel with seats for one match and a half",
			pl:      Playlist{Name: "duel"},
			waiters: []waiter{{"c", 0, 1 * time.Second}, {"a", 0, 3 * time.Second}, {"e", 0, 0}, {"b", 0, 2 * time.Second}, {"d", 0, 1 * time.Second}},
			seats:   3,
			want:    [][][]string{{{"a"}, {"b"}}},
			left:    3,
		},
		{
			name:    "no seat for a match",
			pl:      Playlist{Name: "squad", Teams: 2, TeamSize: 4},
			waiters: []waiter{{"a", 0, 0}, {"b", 0, 0}, {"c", 0, 0}, {"d", 0, 0}, {"e", 0, 0}, {"f", 0, 0}, {"g", 0, 0}, {"h", 0, 0}},
			seats:   7,
			left:    8,
		},
		{
			name: "rated duel with seats for two matches",
			pl:   Playlist{Name: "ranked", Rating: RatingRule{Window: 100}},
			waiters: []waiter{
				{"a", 1000, 6 * time.Second}, {"b", 1010, 5 * time.Second}, {"c", 2000, 4 * time.Second},
				{"d", 2010, 3 * time.Second}, {"e", 3000, 2 * time.Second}, {"f", 3010, 1 * time.Second},
			},
			seats: 5,
			want:  [][][]string{{{"b"}, {"a"}}, {{"d"}, {"c"}}},
			left:  2,
		},
		{
			name:    "too few",
			pl:      Playlist{Name: "squad", Teams: 2, TeamSize: 4},
			waiters: []waiter{{"a", 0, 0}, {"b", 0, 0}, {"c", 0, 0}},
			left:    3,
		},
		{
			name: "4v4 snake draft without ratings",
			pl:   Playlist{Name: "squad", Teams: 2, TeamSize: 4},
			waiters: []waiter{
				{"p1", 0, 8 * time.Second}, {"p2", 0, 7 * time.Second}, {"p3", 0, 6 * time.Second}, {"p4", 0, 5 * time.Second},
				{"p5", 0, 4 * time.Second}, {"p6", 0, 3 * time.Second}, {"p7", 0, 2 * time.Second}, {"p8", 0, 1 * time.Second},
			},
			want: [][][]string{{{"p1", "p4", "p5", "p8"}, {"p2", "p3", "p6", "p7"}}},
		},
		{
			name:    "ratings too far apart",
			pl:      Playlist{Name: "ranked", Rating: RatingRule{Window: 50, Widen: 10}},
			waiters: []waiter{{"a", 1000, 4 * time.Second}, {"b", 1100, 0}},
			left:    2,
		},
		{
			name:    "window widened by the time waited",
			pl:      Playlist{Name: "ranked", Rating: RatingRule{Window: 50, Widen: 10}},
			waiters: []waiter{{"a", 1000, 5 * time.Second}, {"b", 1100, 0}},
			want:    [][][]string{{{"b"}, {"a"}}},
		},
		{
			name:    "window capped",
			pl:      Playlist{Name: "ranked", Rating: RatingRule{Window: 50, Widen: 10, Max: 80}},
			waiters: []waiter{{"a", 1000, time.Minute}, {"b", 1100, 0}},
			left:    2,
		},
		{
			name:    "longest waiting takes the nearest rating",
			pl:      Playlist{Name: "ranked", Rating: RatingRule{Window: 100}},
			waiters: []waiter{{"old", 1000, 9 * time.Second}, {"far", 1090, 8 * time.Second}, {"near", 990, 0}, {"other", 1200, 1 * time.Second}},
			want:    [][][]string{{{"old"}, {"near"}}},
			left:    2,
		},
		{
			name: "2v2 balanced by rating",
			pl:   Playlist{Name: "ranked", TeamSize: 2, Rating: RatingRule{Window: 100}},
			waiters: []waiter{
				{"r1000", 1000, 4 * time.Second}, {"r1010", 1010, 3 * time.Second},
				{"r1020", 1020, 2 * time.Second}, {"r1030", 1030, 1 * time.Second},
			},
			want: [][][]string{{{"r1030", "r1000"}, {"r1020", "r1010"}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pl := withDefaults(t, tc.pl)
			q := newQueue(pl)
			for _, w := range tc.waiters {
				q.add(&entry{id: w.id, rating: w.rating, since: now.Add(-w.waited).UnixNano()})
			}
			seats := tc.seats
			if seats == 0 {
				seats = math.MaxInt
			}
			var got [][][]string
			for _, m := range q.match(now, nil, seats) {
				got = append(got, m.teams)
				for _, e := range m.players {
					if e.state != pending {
						t.Errorf("matched %s is not pending", e.id)
					}
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("matches %v, want %v", got, tc.want)
			}
			if len(q.waiting) != tc.left {
				t.Errorf("%d left waiting, want %d", len(q.waiting), tc.left)
			}
			for i, e := range q.waiting {
				if e.pos != i || e.state != waiting || e.mark {
					t.Errorf("waiting entry %s: pos %d (at %d), state %d, mark %v", e.id, e.pos, i, e.state, e.mark)
				}
			}
		})
	}
}

// Every match holds players within the window of its longest-waiting
// player, nobody is matched twice, and no more players are matched than
// there are seats; those left keep their place.
func TestMatchRatedInvariants(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	for _, tc := range []struct{ size, seats int }{{1, math.MaxInt}, {3, math.MaxInt}, {1, 101}, {3, 101}} {
		pl, _ := Playlist{Name: "r", TeamSize: tc.size, Rating: RatingRule{Window: 20, Widen: 5}}.withDefaults()
		size := tc.size
		q := newQueue(pl)
		rng := rand.New(rand.NewPCG(1, uint64(size)))
		for i := range 2000 {
			q.add(&entry{id: fmt.Sprint(i), rating: rng.NormFloat64() * 300, since: now.Add(-time.Duration(rng.IntN(30_000)) * time.Millisecond).UnixNano()})
		}
		seen := map[string]bool{}
		for _, m := range q.match(now, nil, tc.seats) {
			oldest := m.players[0]
			for _, e := range m.players {
				if e.since < oldest.since {
					oldest = e
				}
			}
			w := pl.Rating.window(oldest.waited(now))
			for _, e := range m.players {
				if seen[e.id] {
					t.Fatalf("%s matched twice", e.id)
				}
				seen[e.id] = true
				if d := e.rating - oldest.rating; d > w || -d > w {
					t.Fatalf("%s (%.0f) is %.0f from %s, window %.0f", e.id, e.rating, d, oldest.id, w)
				}
			}
		}
		if len(seen)+len(q.waiting) != 2000 || len(seen) == 0 {
			t.Fatalf("size %d: %d matched + %d waiting != 2000", size, len(seen), len(q.waiting))
		}
		if len(seen) > tc.seats {
			t.Fatalf("size %d: %d matched with %d seats", size, len(seen), tc.seats)
		}
		for i, e := range q.waiting {
			if e.pos != i || e.state != waiting || e.mark || seen[e.id] {
				t.Fatalf("size %d: waiting entry %s: pos %d (at %d), state %d, mark %v, matched %v", size, e.id, e.pos, i, e.state, e.mark, seen[e.id])
			}
		}
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		cfg       Config
		playlists []Playlist
	}{
		{"no playlist", Config{}, nil},
		{"empty name", Config{}, []Playlist{{}}},
		{"space in name", Config{}, []Playlist{{Name: "my duel"}}},
		{"twice", Config{}, []Playlist{{Name: "duel"}, {Name: "duel"}}},
		{"negative teams", Config{}, []Playlist{{Name: "duel", Teams: -1}}},
		{"negative window", Config{}, []Playlist{{Name: "duel", Rating: RatingRule{Window: -1}}}},
		{"negative tick", Config{Tick: -1}, []Playlist{{Name: "duel"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := New(tc.cfg, tc.playlists...); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestGatherOrderAgreesAndSpreads(t *testing.T) {
	t.Parallel()
	nodes := testNodes(10)
	first := map[string]int{}
	for i := range 1000 {
		pl := fmt.Sprintf("playlist-%d", i)
		a := GatherOrder(Playlist{Name: pl}, nodes)
		// Another server's view lists the same servers in another order.
		shuffled := append(slices.Clone(nodes[5:]), nodes[:5]...)
		if b := GatherOrder(Playlist{Name: pl}, shuffled); !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: orders differ with the input order", pl)
		}
		first[a[0].ID]++
		// Removing a server that is not first leaves the first in place.
		var without []string
		for _, n := range GatherOrder(Playlist{Name: pl}, slices.Delete(slices.Clone(nodes), 3, 4)) {
			without = append(without, n.ID)
		}
		if nodes[3].ID != a[0].ID && without[0] != a[0].ID {
			t.Fatalf("%s: first moved from %s to %s when %s left", pl, a[0].ID, without[0], nodes[3].ID)
		}
	}
	for _, n := range nodes {
		if first[n.ID] < 50 || first[n.ID] > 150 {
			t.Errorf("%s gathers %d of 1000 playlists; want about 100", n.ID, first[n.ID])
		}
	}
}

func testNodes(n int) []fleet.Node {
	nodes := make([]fleet.Node, n)
	for i := range nodes {
		nodes[i] = fleet.Node{ID: fmt.Sprintf("game-%d", i), State: fleet.StateReady, MaxLoad: 10}
	}
	return nodes
}

// A server is in a playlist's gather order only with room, by its
// published load, for at least one match of it; a draining server hands
// players to that order first and to the servers with less room last.
func TestGatherOrderRoomForAMatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		pl    Playlist
		loads []int // of game-0..; max-load 10
		want  []string
		drain []string // the draining server's order (game-0 drains)
	}{
		{"duel exactly at the limit", Playlist{Name: "duel"}, []int{0, 8, 9, 10}, []string{"game-0", "game-1"}, []string{"game-1", "game-2"}},
		{"squad exactly at the limit", Playlist{Name: "squad", Teams: 2, TeamSize: 4}, []int{0, 2, 3, 9}, []string{"game-0", "game-1"}, []string{"game-1", "game-2", "game-3"}},
		{"no room for a match", Playlist{Name: "squad", Teams: 2, TeamSize: 4}, []int{3, 5, 9, 10}, nil, []string{"game-1", "game-2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pl := withDefaults(t, tc.pl)
			nodes := testNodes(len(tc.loads))
			for i, l := range tc.loads {
				nodes[i].Load = l
			}
			ids := func(ns []fleet.Node) (out []string) {
				for _, n := range ns {
					out = append(out, n.ID)
				}
				return out
			}
			module := ids(gatherOrder(pl.Name, pl.size(), nodes, ""))
			// The exported order, given the playlist as configured, is the
			// module's.
			if exported := ids(GatherOrder(tc.pl, nodes)); !slices.Equal(exported, module) {
				t.Errorf("GatherOrder %v, the module's order %v", exported, module)
			}
			got := slices.Sorted(slices.Values(module))
			if !slices.Equal(got, tc.want) {
				t.Errorf("gather order %v, want %v (in any order)", got, tc.want)
			}
			drain := ids(drainOrder(newQueue(pl), nodes, "game-0"))
			var first []string // those with room for a match come first
			for _, id := range drain {
				if slices.Contains(tc.want, id) {
					first = append(first, id)
				}
			}
			if !slices.Equal(first, drain[:len(first)]) {
				t.Errorf("drain order %v: servers with room for a match %v not first", drain, tc.want)
			}
			slices.Sort(drain)
			if !slices.Equal(drain, tc.drain) {
				t.Errorf("drain order %v, want %v (in any order)", drain, tc.drain)
			}
		})
	}
}

func TestGatherOrderOnlyServersWithRoom(t *testing.T) {
	t.Parallel()
	nodes := testNodes(5)
	nodes[0].Load = 10
	nodes[1].State = fleet.StateDraining
	nodes[2].State = fleet.StateStarting
	got := GatherOrder(Playlist{Name: "duel"}, nodes)
	if len(got) != 2 {
		t.Fatalf("order %v, want only game-3 and game-4", got)
	}
	for _, n := range got {
		if n.ID != "game-3" && n.ID != "game-4" {
			t.Fatalf("order %v lists %s", got, n.ID)
		}
	}
}

// Every configuration New refuses is an ErrConfig.
func TestNewConfigErrors(t *testing.T) {
	for name, try := range map[string]func() error{
		"negative tick":  func() error { _, err := New(Config{Tick: -1}, Playlist{Name: "duel"}); return err },
		"no playlist":    func() error { _, err := New(Config{}); return err },
		"twice":          func() error { _, err := New(Config{}, Playlist{Name: "a"}, Playlist{Name: "a"}); return err },
		"bad name":       func() error { _, err := New(Config{}, Playlist{Name: "a b"}); return err },
		"negative teams": func() error { _, err := New(Config{}, Playlist{Name: "a", Teams: -1}); return err },
		"ratings with no rated playlist": func() error {
			_, err := New(Config{Ratings: func(context.Context, string, string) (float64, error) { return 0, nil }}, Playlist{Name: "a"})
			return err
		},
	} {
		if err := try(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want an ErrConfig", name, err)
		}
	}
}
