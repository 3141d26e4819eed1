package room

import (
	"context"
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
//
// The first workers keep time themselves (see timekeepers): there is no
// tick driver whose thread, run late by the OS, would hold back every
// room.
type scheduler struct {
	period  time.Duration
	workers int
	// exact is set while a timekeeper sleeps the last stretch before a
	// slot in the kernel (see slotClock).
	exact atomic.Bool
	epoch time.Time // the origin of the scheduler's clock

	mu     sync.Mutex
	slots  [slots][]stepper // a batch keeps the slice it was cut from: only appended to, or replaced
	next   int              // slot for the next room
	dead   [slots]int       // ended rooms still in each slot
	ended  map[stepper]bool // those rooms
	placed int              // rooms put in slot next since it was chosen
	rooms  int              // rooms that have not ended
	idle   chan struct{}    // closed when a room is added to a scheduler without any

	late []lateness // one per worker

	// Slots are counted from start: slot n is due at start+(n+1)*slotLen,
	// and its batch is published at ring[n%ringLen] before cutNext passes
	// n.
	start   time.Time
	cutMu   sync.Mutex // held while slots are cut
	cutNext atomic.Uint64
	ring    [ringLen]atomic.Pointer[batch]
	wake    []chan struct{} // per worker past the timekeepers: a slot was cut
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
	// n is the slot's number, counted from the scheduler's start. A
	// batch is cut again for a later slot once no worker runs it, so
	// that the tick's batches allocate nothing: refs counts the workers
	// running it, and is -1 while it is cut again.
	n      atomic.Uint64
	refs   atomic.Int32
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
	s.rooms++
	if s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

// idleWait returns a channel closed when a room is added, if no room
// runs now; otherwise nil. A timekeeper waits on it rather than on the
// clock, so that a host without rooms costs no wake-ups.
func (s *scheduler) idleWait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rooms > 0 {
		return nil
	}
	if s.idle == nil {
		s.idle = make(chan struct{})
	}
	return s.idle
}

// skipIdle passes over the slots that fell due while no room ran: they
// held no room, and a room added since is stepped at its slot's next
// turn, not late at once.
func (s *scheduler) skipIdle() {
	due := s.slotsDue()
	s.cutMu.Lock()
	defer s.cutMu.Unlock()
	if s.cutNext.Load() < due {
		s.cutNext.Store(due)
	}
}

// timekeepers is how many workers keep time: each sleeps until the next
// slot is due, cuts it unless another did, and runs it; the other workers
// are woken by the one that cut it. A single tick driver was a single
// point of failure: a thread is run late now and then (the OS, and on a
// virtual machine the hypervisor, takes its CPU for a few milliseconds),
// and every room waited for it; with two, the other cuts the slot on
// time. More than two would only add wake-ups.
const timekeepers = 2

// run steps the rooms until ctx ends, and returns when every worker has.
func (s *scheduler) run(ctx context.Context) {
	s.start = time.Now()
	s.wake = make([]chan struct{}, s.workers)
	for w := timekeepers; w < s.workers; w++ {
		s.wake[w] = make(chan struct{}, 1)
	}
	var wg sync.WaitGroup
	for w := range s.workers {
		wg.Go(func() { s.work(ctx, w) })
	}
	wg.Wait()
}

// ringLen is how many slots' batches are kept for the workers: a whole
// period's. Batches of different slots hold different rooms, so none may
// be skipped while a worker is merely a little behind; a worker more than
// a period behind skips to the last period's batches, which hold every
// room once.
const ringLen = slots

// work runs the batches of the slots cut, in order, until ctx ends.
func (s *scheduler) work(ctx context.Context, w int) {
	var clock *slotClock
	if w < timekeepers {
		var exact *atomic.Bool
		if runtime.GOMAXPROCS(0) > 1 { // a P is left for the rest of the process
			exact = &s.exact
		}
		clock = newSlotClock(exact)
		defer clock.stop()
	}
	var seen uint64 // the next slot this worker runs
	for {
		if clock != nil {
			s.cutDue()
		}
		s.runCut(w, &seen)
		if clock != nil {
			if idle := s.idleWait(); idle != nil {
				select {
				case <-ctx.Done():
					return
				case <-idle:
				}
				s.skipIdle()
				continue
			}
			if !clock.wait(ctx, s.dueAt(s.cutNext.Load())) {
				return
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-s.wake[w]:
		}
	}
}

// dueAt returns when slot n is due.
func (s *scheduler) dueAt(n uint64) time.Time {
	return s.start.Add(time.Duration(n+1) * (s.period / slots))
}

// cutDue cuts and publishes every slot due by now that no worker has cut,
// and wakes the workers that do not keep time.
func (s *scheduler) cutDue() {
	s.cutUpTo(s.slotsDue())
}

// slotsDue returns how many slots have fallen due since the start.
func (s *scheduler) slotsDue() uint64 {
	return uint64(time.Since(s.start) / (s.period / slots))
}

// cutUpTo cuts the slots before due that no worker has cut.
func (s *scheduler) cutUpTo(due uint64) {
	if s.cutNext.Load() >= due {
		return
	}
	s.cutMu.Lock()
	n := s.cutNext.Load()
	if n >= due {
		s.cutMu.Unlock()
		return // another timekeeper cut them
	}
	// Counting slots by the clock, a timekeeper that ran late cuts
	// every slot owed rather than drifting; only the last period's
	// batches are kept, and they hold every room.
	n = max(n, due-min(due, ringLen))
	for ; n < due; n++ {
		b := s.ring[n%ringLen].Load()
		if b == nil || !b.refs.CompareAndSwap(0, -1) {
			b = new(batch) // a worker still runs the old one: it keeps it
		}
		s.cutInto(b, n%slots, n/slots+1, s.dueAt(n))
		b.n.Store(n)
		b.refs.Store(0)
		s.ring[n%ringLen].Store(b)
		s.cutNext.Store(n + 1)
	}
	s.cutMu.Unlock()
	for _, c := range s.wake {
		if c != nil {
			select {
			case c <- struct{}{}:
			default: // already woken
			}
		}
	}
}

// runCut runs the batches of the slots cut since *seen, in order, and
// moves *seen past them. Every worker runs every batch and they share
// its rooms, so a batch runs as soon as any worker is free; one that
// finds it done passes over it in a few atomic loads.
func (s *scheduler) runCut(w int, seen *uint64) {
	cut := s.cutNext.Load()
	if cut-*seen > ringLen {
		*seen = cut - ringLen // their slots were cut again since
	}
	for ; *seen < cut; *seen++ {
		b := s.ring[*seen%ringLen].Load()
		if b == nil || !b.acquire() {
			continue // being cut again, for a later slot
		}
		// A batch cut again for a later slot means this one's rooms
		// were cut again: that batch steps them.
		if b.n.Load() == *seen && len(b.chunks) > 0 {
			s.runBatch(w, b)
		}
		b.refs.Add(-1)
	}
}

// acquire counts a worker in as running b, unless b is being cut again.
func (b *batch) acquire() bool {
	for {
		r := b.refs.Load()
		if r < 0 {
			return false
		}
		if b.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// cutInto makes b, which no worker runs, the batch of one slot, reusing
// its chunks: the slot's rooms in chunks, about four chunks per worker so
// that work spreads before any taking over is needed.
func (s *scheduler) cutInto(b *batch, slot, tick uint64, due time.Time) {
	s.mu.Lock()
	rooms := s.slots[slot]
	s.mu.Unlock()
	size := max(1, min(256, len(rooms)/(4*s.workers)))
	clear(b.chunks) // the rooms of the slot it was cut for last
	b.chunks = b.chunks[:0]
	b.tick, b.due = tick, due.Sub(s.epoch)
	b.next.Store(0)
	for rs := range slices.Chunk(rooms, size) {
		b.chunks = append(b.chunks, chunk{rooms: rs})
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
		// Workers fill every P; yield between chunks so the connections
		// (and the other workers, back from their sleep) run on time
		// rather than at the next preemption, up to 10ms later.
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
		s.rooms--
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
