package room

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// stepper is one room as the scheduler sees it.
type stepper interface {
	// pass runs the room's steps due at scheduler tick t. It reports
	// false when the room has ended and should be dropped.
	pass(t uint64) bool
	// busy is the room's flag: set while a worker steps it.
	busyFlag() *atomic.Bool
}

// scheduler steps every room at a fixed rate on a pool of workers, with
// no goroutine or timer per room. At each tick the current rooms are cut
// into chunks; workers claim chunks and take rooms from them one at a time
// through the chunk's cursor, and a worker that runs out of chunks takes
// the remaining rooms of others. So every room is stepped by one worker at
// a time, and a slow room delays only itself: the rooms queued behind it
// are taken by the other workers.
type scheduler struct {
	period  time.Duration
	workers int

	mu    sync.Mutex
	rooms []stepper // copy-on-write: a batch keeps the slice it was cut from

	late lateness
}

type chunk struct {
	rooms  []stepper
	cursor atomic.Int64
}

type batch struct {
	tick   uint64
	due    time.Time
	chunks []chunk
	next   atomic.Int64 // next chunk to claim
}

func newScheduler(period time.Duration, workers int) *scheduler {
	return &scheduler{period: period, workers: workers}
}

func (s *scheduler) add(r stepper) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rooms := make([]stepper, len(s.rooms), len(s.rooms)+1)
	copy(rooms, s.rooms)
	s.rooms = append(rooms, r)
}

// run steps the rooms until ctx ends, and returns when every worker has.
func (s *scheduler) run(ctx context.Context) {
	feeds := make([]chan *batch, s.workers)
	var wg sync.WaitGroup
	for i := range feeds {
		feeds[i] = make(chan *batch, 1)
		wg.Go(func() { s.work(feeds[i]) })
	}
	defer func() {
		for _, f := range feeds {
			close(f)
		}
		wg.Wait()
	}()

	start := time.Now()
	t := time.NewTicker(s.period)
	defer t.Stop()
	for tick := uint64(1); ; tick++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b := s.cut(tick, start.Add(time.Duration(tick)*s.period))
		for _, f := range feeds {
			// A worker still busy with an older batch gets the newest
			// one instead: the others have finished the older one.
			select {
			case <-f:
			default:
			}
			f <- b
		}
	}
}

// cut makes the batch of tick t: the current rooms in chunks, about four
// chunks per worker so work spreads before any stealing is needed.
func (s *scheduler) cut(t uint64, due time.Time) *batch {
	s.mu.Lock()
	rooms := s.rooms
	s.mu.Unlock()
	size := max(1, min(256, len(rooms)/(4*s.workers)))
	b := &batch{tick: t, due: due}
	for rs := range slices.Chunk(rooms, size) {
		b.chunks = append(b.chunks, chunk{rooms: rs})
	}
	return b
}

func (s *scheduler) work(feed <-chan *batch) {
	for b := range feed {
		s.runBatch(b)
	}
}

// runBatch takes chunks of b until none is left, then helps with the
// rooms left in other workers' chunks.
func (s *scheduler) runBatch(b *batch) {
	for {
		i := b.next.Add(1) - 1
		if i >= int64(len(b.chunks)) {
			break
		}
		s.drainChunk(b, &b.chunks[i])
	}
	for i := range b.chunks {
		s.drainChunk(b, &b.chunks[i])
	}
}

func (s *scheduler) drainChunk(b *batch, c *chunk) {
	for {
		i := c.cursor.Add(1) - 1
		if i >= int64(len(c.rooms)) {
			return
		}
		r := c.rooms[i]
		busy := r.busyFlag()
		if !busy.CompareAndSwap(false, true) {
			continue // still in an earlier pass; it catches up next tick
		}
		s.late.record(time.Since(b.due))
		alive := r.pass(b.tick)
		busy.Store(false)
		if !alive {
			s.drop(r)
		}
	}
}

func (s *scheduler) drop(r stepper) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.rooms, r); i >= 0 {
		rooms := make([]stepper, 0, len(s.rooms)-1)
		rooms = append(append(rooms, s.rooms[:i]...), s.rooms[i+1:]...)
		s.rooms = rooms
	}
}

// len returns the number of rooms being stepped.
func (s *scheduler) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rooms)
}

// lateness is a histogram of how late room passes start after their tick,
// in 25µs buckets up to 25ms.
type lateness struct {
	buckets [1001]atomic.Uint64
}

const lateBucket = 25 * time.Microsecond

func (l *lateness) record(d time.Duration) {
	i := max(0, min(int(d/lateBucket), len(l.buckets)-1))
	l.buckets[i].Add(1)
}

// quantile returns the lateness below which fraction q of passes started,
// rounded up to its bucket, and the number of passes recorded.
func (l *lateness) quantile(q float64) (time.Duration, uint64) {
	var total uint64
	counts := make([]uint64, len(l.buckets))
	for i := range l.buckets {
		counts[i] = l.buckets[i].Load()
		total += counts[i]
	}
	if total == 0 {
		return 0, 0
	}
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, n := range counts {
		seen += n
		if seen >= want {
			return time.Duration(i+1) * lateBucket, total
		}
	}
	return time.Duration(len(counts)) * lateBucket, total
}

func (l *lateness) reset() {
	for i := range l.buckets {
		l.buckets[i].Store(0)
	}
}
