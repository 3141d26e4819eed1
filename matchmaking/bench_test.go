package matchmaking

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/muster-gg/muster/internal/testkit/hosttest"
)

// benchBatch is the number of players that enqueue between two rounds.
const benchBatch = 10_000

var benchPlaylists = []struct {
	name string
	pl   Playlist
}{
	{"1v1", Playlist{Name: "duel"}},
	{"1v1-rated", Playlist{Name: "duel", Rating: RatingRule{Window: 50, Widen: 25, Max: 400}}},
	{"4v4", Playlist{Name: "squad", Teams: 2, TeamSize: 4}},
	{"4v4-rated", Playlist{Name: "squad", Teams: 2, TeamSize: 4, Rating: RatingRule{Window: 50, Widen: 25, Max: 400}}},
}

// BenchmarkMatch measures the matcher alone: benchBatch players, who
// have waited up to 10 s with ratings around 1500, enter the queue and
// one round matches them. players/s counts the players matched.
func BenchmarkMatch(b *testing.B) {
	for _, bc := range benchPlaylists {
		b.Run(bc.name, func(b *testing.B) {
			pl := withDefaults(b, bc.pl)
			q := newQueue(pl)
			now := time.Unix(1_000_000, 0)
			rng := rand.New(rand.NewPCG(1, 2))
			entries := make([]*entry, benchBatch)
			for i := range entries {
				entries[i] = &entry{
					id:     fmt.Sprintf("p%d", i),
					rating: 1500 + rng.NormFloat64()*300,
					since:  now.Add(-time.Duration(rng.IntN(10_000)) * time.Millisecond).UnixNano(),
				}
			}
			var out []match
			matched := 0
			b.ReportAllocs()
			for b.Loop() {
				q.waiting = q.waiting[:0]
				for _, e := range entries {
					q.add(e)
				}
				out = q.match(now, out[:0], math.MaxInt)
				for _, m := range out {
					matched += len(m.players)
				}
			}
			b.ReportMetric(float64(matched)/b.Elapsed().Seconds(), "players/s")
			b.ReportMetric(float64(matched)/float64(b.N*benchBatch), "matched/enqueued")
		})
	}
}

// BenchmarkStep measures a whole round of the module on a gather server:
// benchBatch players enqueue (message handling, bookkeeping), and one
// step matches them and hands each match to the host to open (here a
// host that opens nothing, so that only the module is measured).
func BenchmarkStep(b *testing.B) {
	for _, bc := range benchPlaylists {
		b.Run(bc.name, func(b *testing.B) {
			m, err := New(Config{}, bc.pl)
			if err != nil {
				b.Fatal(err)
			}
			m.kit.Env, m.kit.Logger = nopEnv{}, quiet
			ids := make([]string, benchBatch)
			ratings := make([]float64, benchBatch)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range ids {
				ids[i] = fmt.Sprintf("p%d", i)
				ratings[i] = 1500 + rng.NormFloat64()*300
			}
			ctx := context.Background()
			now := time.Unix(1_000_000, 0)
			b.ReportAllocs()
			matched := 0
			for b.Loop() {
				start := now.Add(-10 * time.Second)
				for i, id := range ids {
					m.enqueue(id, bc.pl.Name, &ratings[i], start, start.Add(time.Duration(i)*time.Millisecond))
				}
				before := len(m.players)
				left := m.step(ctx, now)
				matched += before - left
				for _, q := range m.order { // start every round afresh
					for _, e := range q.waiting {
						delete(m.players, e.id)
					}
					q.waiting = q.waiting[:0]
				}
			}
			b.ReportMetric(float64(matched)/b.Elapsed().Seconds(), "players/s")
		})
	}
}

// nopEnv is a host with no fleet that opens rooms instantly, sends
// nothing and seats nobody.
type nopEnv struct{ hosttest.NopEnv }

func (nopEnv) Seated(string) bool { return false }
func (nopEnv) FreeSeats() int     { return math.MaxInt }
