package room

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkPass measures one pass of a trivial room with nothing queued:
// the scheduler's cost per room per tick. In "waiting", each room has two
// players seated who have not connected yet (every room right after a
// match is made, until its players arrive).
func BenchmarkPass(b *testing.B) {
	for _, c := range []struct {
		name    string
		players []string
	}{{"empty", nil}, {"waiting", []string{"a", "b"}}} {
		b.Run(c.name, func(b *testing.B) {
			h, err := New[*csim, int, *cplayer](newCounterQuiet(), Config{}, quietLog)
			if err != nil {
				b.Fatal(err)
			}
			const n = 100_000
			rooms := make([]*Room[*csim, int, *cplayer], n)
			for i := range rooms {
				var players []string
				for _, p := range c.players {
					players = append(players, fmt.Sprint(p, i))
				}
				r, err := h.OpenRoom(b.Context(), Info{ID: fmt.Sprint(i), Players: players})
				if err != nil {
					b.Fatal(err)
				}
				rooms[i] = r
			}
			b.ReportAllocs()
			t := uint64(1)
			i := 0
			var now time.Duration
			for b.Loop() {
				if i%8 == 0 { // as often as a worker reads the clock
					now = h.sched.since()
				}
				r := rooms[i]
				r.busy.Store(true)
				r.pass(t, now)
				r.busy.Store(false)
				if i++; i == n {
					i, t = 0, t+1
				}
			}
		})
	}
}

// newCounterQuiet is the counter game without its per-step log, so the
// benchmark measures the host, not the test game.
func newCounterQuiet() *quietCounter { return &quietCounter{} }

type quietCounter struct{}

func (quietCounter) NewSim(Info) *csim                                       { return &csim{} }
func (quietCounter) Join(*Room[*csim, int, *cplayer], string) *cplayer       { return &cplayer{} }
func (quietCounter) Leave(*Room[*csim, int, *cplayer], *cplayer)             {}
func (quietCounter) Input(r *Room[*csim, int, *cplayer], _ *cplayer, in int) { r.Sim().total += in }
func (quietCounter) FixedStep(r *Room[*csim, int, *cplayer])                 { r.Sim().total++ }

// BenchmarkSlot measures one slot's turn of the tick: cutting its batch
// and running it, with 10,000 rooms (that do nothing) spread over the
// slots, on one worker.
func BenchmarkSlot(b *testing.B) {
	s := newScheduler(time.Second/60, 1)
	for range 10_000 {
		s.add(&nopStepper{})
	}
	s.start = time.Now()
	var n, seen uint64
	b.ReportAllocs()
	for b.Loop() {
		n++
		s.cutUpTo(n)
		s.runCut(0, &seen)
	}
}
