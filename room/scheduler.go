package room

import (
	"context"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// stepper is one room as the scheduler sees it.
type stepper interface {
	// pass runs the room's steps due at its tick t; now is the time on
	// the scheduler's clock (see scheduler.since), read at most a few
	// rooms ago. It reports false when the room has ended and should be
	// dropped.
	pass(t uint64, now time.Duration) bool
	// busyFlag is set while a worker steps the room.
	busyFlag() *atomic.Bool
	// lastTick is the tick of the room's last pass, 0 before the first.
	// Only the worker holding busyFlag may call it.
	lastTick() uint64
}

// slots is how many phases a tick period is cut into. Rooms are spread
// over them, so that a tick's work is spread over the period instead of
// landing all at once: a room's lateness is then the time its own slot
// takes, not the whole tick's.
const slots = 16

// scheduler steps every room at a fixed rate on a pool of workers, with no
// goroutine or timer per room.
//
// Each room belongs to one of the period's slots. When a slot is due, its
// rooms are cut into chunks; workers claim chunks and take rooms from them
// one at a time through the chunk's cursor, and a worker that runs out of
// chunks takes the rooms left in the others'. So every room is stepped by
// one worker at a time, and a slow room delays only itself: the rooms
// queued behind it are taken by the other workers.
type scheduler struct {
	period  time.Duration
	workers int
	epoch   time.Time // the origin of the scheduler's clock

	mu     sync.Mutex
	slots  [slots][]stepper // a batch keeps the slice it was cut from: only appended to, or replaced
	next   int              // slot for the next room
	dead   [slots]int       // ended rooms still in each slot
	ended  map[stepper]bool // those rooms
	placed int              // rooms put in slot next since it was chosen

	late []lateness // one per worker
}

type chunk struct {
	rooms  []stepper
	cursor atomic.Int64
	// Workers take rooms from different chunks at once: keep each
	// cursor on its own cache line, or every room taken costs a line
	// moving between cores.
	_ [64 - 24 - 8]byte
}

type batch struct {
	tick   uint64
	due    time.Duration // on the scheduler's clock
	chunks []chunk
	next   atomic.Int64 // next chunk to claim
}

func newScheduler(period time.Duration, workers int) *scheduler {
	return &scheduler{period: period, workers: workers, epoch: time.Now(), late: make([]lateness, workers)}
}

// since reads the scheduler's clock: the monotonic time since its epoch.
// Rooms keep their deadlines on it, so a pass compares two integers
// instead of reading the clock itself.
func (s *scheduler) since() time.Duration { return time.Since(s.epoch) }

// block is how many rooms opened one after another go to the same slot.
// They are likely neighbours in memory, and a worker stepping them one
// after another then finds them in the caches it has just filled: with
// every room in a different page, a pass costs several times as much.
const block = 64

func (s *scheduler) add(r stepper) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.placed == block {
		// The next block goes to the slot with the fewest rooms, which
		// also evens out the slots as rooms end.
		s.placed = 0
		for i := range s.slots {
			if s.live(i) < s.live(s.next) {
				s.next = i
			}
		}
	}
	s.placed++
	// Appending writes past the end of the slices that batches hold, never
	// into them.
	s.slots[s.next] = append(s.slots[s.next], r)
}

// run steps the rooms until ctx ends, and returns when every worker has.
func (s *scheduler) run(ctx context.Context) {
	feeds := make([]chan *batch, s.workers)
	var wg sync.WaitGroup
	for i := range feeds {
		feeds[i] = newFeed()
		wg.Go(func() { s.work(i, feeds[i]) })
	}
	defer func() {
		for _, f := range feeds {
			close(f)
		}
		wg.Wait()
	}()

	start := time.Now()
	slotLen := s.period / slots
	clock := newSlotClock()
	defer clock.stop()
	var n uint64 // next slot to run, counted from start
	for clock.wait(ctx, start.Add(time.Duration(n+1)*slotLen)) {
		// Count slots by the clock, so that a late driver runs every
		// slot it owes rather than drifting.
		for due := uint64(time.Since(start) / slotLen); n < due; n++ {
			s.dispatch(feeds, n, start.Add(time.Duration(n+1)*slotLen))
		}
	}
}

// feedLen is how many batches a worker's queue holds: a whole period's
// slots. Batches of different slots hold different rooms, so none may be
// dropped while a worker is merely a little behind; only a worker more
// than a period behind loses its oldest batch, whose rooms the other
// workers have stepped (or the same slot's next batch steps, catching up).
const feedLen = slots

func newFeed() chan *batch { return make(chan *batch, feedLen) }

// dispatch hands slot n (slot n%slots of tick n/slots+1) to the workers.
func (s *scheduler) dispatch(feeds []chan *batch, n uint64, due time.Time) {
	b := s.cut(n%slots, n/slots+1, due)
	if len(b.chunks) == 0 {
		return
	}
	for _, f := range feeds {
		// Every worker gets every batch and they share its rooms, so a
		// batch runs as soon as any worker is free; one that finds it
		// done passes over it in a few atomic loads.
		for {
			select {
			case f <- b:
			default:
				// This worker is a whole period behind: drop its
				// oldest batch, which the other workers have run (or
				// the same slot's next batch catches up).
				select {
				case <-f:
				default:
				}
				continue
			}
			break
		}
	}
}

// cut makes the batch of one slot: its rooms in chunks, about four chunks
// per worker so that work spreads before any taking over is needed.
func (s *scheduler) cut(slot, tick uint64, due time.Time) *batch {
	s.mu.Lock()
	rooms := s.slots[slot]
	s.mu.Unlock()
	size := max(1, min(256, len(rooms)/(4*s.workers)))
	b := &batch{tick: tick, due: due.Sub(s.epoch)}
	for rs := range slices.Chunk(rooms, size) {
		b.chunks = append(b.chunks, chunk{rooms: rs})
	}
	return b
}

func (s *scheduler) work(w int, feed <-chan *batch) {
	for b := range feed {
		s.runBatch(w, b)
	}
}

// runBatch takes chunks of b until none is left, then helps with the
// rooms left in other workers' chunks.
func (s *scheduler) runBatch(w int, b *batch) {
	for {
		i := b.next.Add(1) - 1
		if i >= int64(len(b.chunks)) {
			break
		}
		s.drainChunk(w, b, &b.chunks[i])
		// Workers fill every P; yield between chunks so the tick driver
		// (and the connections) run on time rather than at the next
		// preemption, up to 10ms later.
		runtime.Gosched()
	}
	for i := range b.chunks {
		s.drainChunk(w, b, &b.chunks[i])
	}
}

func (s *scheduler) drainChunk(w int, b *batch, c *chunk) {
	var late, now time.Duration
	for n := 0; ; n++ {
		i := c.cursor.Add(1) - 1
		if i >= int64(len(c.rooms)) {
			return
		}
		r := c.rooms[i]
		busy := r.busyFlag()
		if !busy.CompareAndSwap(false, true) {
			continue // still in an earlier pass; it catches up next tick
		}
		if r.lastTick() >= b.tick {
			// Stepped for this tick or a later one by a newer batch
			// while this one waited: never step a room twice, or back.
			busy.Store(false)
			continue
		}
		if n%8 == 0 { // reading the clock costs more than a trivial step
			now = s.since()
			late = now - b.due
		}
		s.late[w].record(late)
		if last := r.lastTick(); last != 0 && b.tick > last+1 {
			// The steps of the ticks since the last pass were owed while
			// the room waited (a stalled worker, a batch superseded, a
			// pass still running) and are run late or dropped now:
			// each counts, as late as it is.
			s.late[w].recordOwed(late, s.period, b.tick-last-1)
		}
		if !r.pass(b.tick, now) {
			s.drop(r) // keeping busy: no worker steps it again
			continue
		}
		busy.Store(false)
	}
}

// drop forgets a room that ended. The worker that found it ended keeps
// its busy flag set for good, so no worker steps it again while it stays
// in its slot; the slot is copied without its ended rooms once they are
// an eighth of it. (Batches hold the slot's slice, so it is never changed
// in place; copying it at every room's end was a quarter of what
// bench/rooms' churn run allocated.)
func (s *scheduler) drop(r stepper) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, rooms := range s.slots {
		if !slices.Contains(rooms, r) {
			continue
		}
		if s.ended == nil {
			s.ended = make(map[stepper]bool)
		}
		s.ended[r] = true
		s.dead[i]++
		if s.dead[i]*8 >= len(rooms) {
			s.slots[i] = slices.DeleteFunc(slices.Clone(rooms), func(x stepper) bool {
				if s.ended[x] {
					delete(s.ended, x)
					return true
				}
				return false
			})
			s.dead[i] = 0
		}
		return
	}
}

// live returns how many rooms of slot i have not ended. s.mu must be held.
func (s *scheduler) live(i int) int { return len(s.slots[i]) - s.dead[i] }

// lateness returns the quantile q of how late room passes started after
// they were due, over all workers, and the number of passes measured.
func (s *scheduler) lateness(q float64) (time.Duration, uint64) {
	var sum lateness
	for i := range s.late {
		for j := range sum.buckets {
			sum.buckets[j].Add(s.late[i].buckets[j].Load())
		}
	}
	return sum.quantile(q)
}

// resetLateness forgets the passes measured so far.
func (s *scheduler) resetLateness() {
	for i := range s.late {
		for j := range s.late[i].buckets {
			s.late[i].buckets[j].Store(0)
		}
	}
}

// lateness is a histogram of how late room steps start: 25µs buckets up
// to 25ms, then 1ms buckets up to about 2s, so that a worker stalled by
// a blocked hook shows. Each worker writes its own.
type lateness struct {
	buckets [fineBuckets + coarseBuckets]atomic.Uint64
}

const (
	lateBucket    = 25 * time.Microsecond
	fineBuckets   = 1000 // of lateBucket, up to 25ms
	coarseBucket  = time.Millisecond
	coarseBuckets = 2000 // of coarseBucket, from 25ms up to 2.025s
	fineTop       = fineBuckets * lateBucket
)

func bucketOf(d time.Duration) int {
	if d < fineTop {
		return max(0, int(d/lateBucket))
	}
	return min(fineBuckets+int((d-fineTop)/coarseBucket), fineBuckets+coarseBuckets-1)
}

// upper returns the upper bound of bucket i.
func upper(i int) time.Duration {
	if i < fineBuckets {
		return time.Duration(i+1) * lateBucket
	}
	return fineTop + time.Duration(i-fineBuckets+1)*coarseBucket
}

func (l *lateness) record(d time.Duration) { l.buckets[bucketOf(d)].Add(1) }

// recordOwed records n steps owed since a pass late by late: the most
// recent was due one period before it, the next two, and so on.
func (l *lateness) recordOwed(late, period time.Duration, n uint64) {
	top := len(l.buckets) - 1
	for j := uint64(1); j <= n; j++ {
		i := bucketOf(late + time.Duration(j)*period)
		if i == top {
			l.buckets[top].Add(n - j + 1)
			return
		}
		l.buckets[i].Add(1)
	}
}

// quantile returns the lateness below which fraction q of steps started,
// rounded up to its bucket, and the number of steps recorded.
func (l *lateness) quantile(q float64) (time.Duration, uint64) {
	var total uint64
	for i := range l.buckets {
		total += l.buckets[i].Load()
	}
	if total == 0 {
		return 0, 0
	}
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i := range l.buckets {
		seen += l.buckets[i].Load()
		if seen >= want {
			return upper(i), total
		}
	}
	return upper(len(l.buckets) - 1), total
}
