package room

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/internal/testkit/testrun"
)

type nopStepper struct{ busy atomic.Bool }

func (*nopStepper) pass(uint64, time.Duration) bool { return true }
func (s *nopStepper) busyFlag() *atomic.Bool        { return &s.busy }
func (*nopStepper) lastTick() uint64                { return 0 }

// Rooms opened one after another share a slot, a block at a time; each
// block goes to the emptiest slot, so the slots stay even as rooms end.
func TestSchedulerPlacement(t *testing.T) {
	s := newScheduler(time.Second/60, 1)
	var rooms []*nopStepper
	for range 2 * slots * block {
		r := &nopStepper{}
		rooms = append(rooms, r)
		s.add(r)
	}
	for i, rs := range s.slots {
		if len(rs) != 2*block {
			t.Fatalf("slot %d has %d rooms, want %d", i, len(rs), 2*block)
		}
		for j := 1; j < block; j++ {
			if rs[j] != stepper(rooms[i*block+j]) {
				t.Fatalf("slot %d: room %d is not the one opened after room %d", i, j, j-1)
			}
		}
	}
	// Slot 5 loses a block's worth of rooms: the next block goes there.
	for _, r := range s.slots[5][:block] {
		s.drop(r)
	}
	for range block {
		s.add(&nopStepper{})
	}
	for i, rs := range s.slots {
		if len(rs) != 2*block {
			t.Errorf("after refilling, slot %d has %d rooms, want %d", i, len(rs), 2*block)
		}
	}
}

// countStepper counts its passes and keeps the tick of the last.
type countStepper struct {
	busy   atomic.Bool
	last   uint64
	passes atomic.Int64
}

func (c *countStepper) pass(t uint64, _ time.Duration) bool {
	c.last = t
	c.passes.Add(1)
	return true
}
func (c *countStepper) busyFlag() *atomic.Bool { return &c.busy }
func (c *countStepper) lastTick() uint64       { return c.last }

// A timekeeper that runs late cuts the slots owed back to back, before
// any worker has taken the first: every slot's rooms must still be
// stepped, not only the last slot's.
func TestSchedulerLateDriverStepsEverySlot(t *testing.T) {
	const workers = 2
	s := newScheduler(time.Second/60, workers)
	var rooms []*countStepper
	for range 3 * block {
		r := &countStepper{}
		rooms = append(rooms, r)
		s.add(r) // a block each in slots 0, 1 and 2
	}
	// The timekeeper woke three slots late.
	s.start = time.Now().Add(-3*s.period/slots - time.Microsecond)
	s.cutDue()
	if got := s.cutNext.Load(); got != 3 {
		t.Fatalf("%d slots cut, want 3", got)
	}
	for w := range workers {
		var seen uint64
		s.runCut(w, &seen)
	}
	for i, r := range rooms {
		if got := r.passes.Load(); got != 1 {
			t.Fatalf("room %d (slot %d) was stepped %d times, want 1", i, i/block, got)
		}
	}
}

// A timekeeper that the OS does not run (its thread descheduled, here
// never started) holds no slot back: the other cuts and steps every slot.
func TestSchedulerOneTimekeeperStalled(t *testing.T) {
	s := newScheduler(time.Second/60, timekeepers)
	var rooms []*countStepper
	for range 2 * slots * block {
		r := &countStepper{}
		rooms = append(rooms, r)
		s.add(r)
	}
	s.start = time.Now()
	testrun.GoRun(t, func(ctx context.Context) error { s.work(ctx, 1); return nil }) // worker 0 never runs
	for i, r := range rooms {
		testrun.WaitFor(t, fmt.Sprintf("room %d (slot %d) stepped 3 times with one timekeeper stalled", i, i/block%slots),
			func() bool { return r.passes.Load() >= 3 })
	}
}

// A worker that takes a batch after the room's slot has been stepped for
// a later tick (the worker was descheduled, or its queue ran behind) does
// not step the room again, and never backwards.
func TestSchedulerStaleBatchSkipsSteppedRooms(t *testing.T) {
	s := newScheduler(time.Second/60, 1)
	r := &countStepper{last: 7}
	b := &batch{tick: 5, due: s.since(), chunks: []chunk{{rooms: []stepper{r}}}}
	s.runBatch(0, b)
	if got := r.passes.Load(); got != 0 || r.last != 7 {
		t.Fatalf("stale batch stepped the room %d times, last tick %d; want 0 and 7", got, r.last)
	}
}

// endStepper is a room that ends at its first pass.
type endStepper struct{ countStepper }

func (e *endStepper) pass(t uint64, now time.Duration) bool {
	e.countStepper.pass(t, now)
	return false
}

// A room that ended is never stepped again, though its slot keeps it
// until enough rooms of the slot ended to copy it without them.
func TestSchedulerEndedRoomNotSteppedAgain(t *testing.T) {
	s := newScheduler(time.Second/60, 1)
	ending := &endStepper{}
	s.add(ending)
	others := make([]*countStepper, 2*8)
	for i := range others {
		others[i] = &countStepper{}
		s.add(others[i])
	}
	for tick := uint64(1); tick <= 3; tick++ {
		b := new(batch)
		s.cutInto(b, 0, tick, time.Now())
		s.runBatch(0, b)
	}
	if n := ending.passes.Load(); n != 1 {
		t.Fatalf("the ended room was stepped %d times, want 1", n)
	}
	for i, r := range others {
		if n := r.passes.Load(); n != 3 {
			t.Fatalf("room %d was stepped %d times, want 3", i, n)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live(0) != len(others) || len(s.slots[0]) != len(others)+1 {
		t.Fatalf("slot 0: %d rooms, %d live; want the ended one kept until an eighth ended", len(s.slots[0]), s.live(0))
	}
}

// orderStepper fails the test if it is passed a tick not after its last.
type orderStepper struct {
	countStepper
	t *testing.T
}

func (o *orderStepper) pass(t uint64, now time.Duration) bool {
	if t <= o.last {
		o.t.Errorf("stepped at tick %d after tick %d", t, o.last)
	}
	return o.countStepper.pass(t, now)
}

// Workers that keep time and workers woken by them share every slot's
// batch, and batches are cut again for later slots while workers may
// still hold them: no room is stepped twice for a tick, or backwards.
func TestSchedulerWorkersStepEachTickOnce(t *testing.T) {
	s := newScheduler(time.Second/60, timekeepers+2)
	var rooms []*orderStepper
	for range 2 * slots * block {
		r := &orderStepper{t: t}
		rooms = append(rooms, r)
		s.add(r)
	}
	testrun.GoRun(t, func(ctx context.Context) error { s.run(ctx); return nil })
	for i, r := range rooms {
		testrun.WaitFor(t, fmt.Sprintf("room %d stepped 20 times", i), func() bool { return r.passes.Load() >= 20 })
	}
}

// A scheduler without rooms cuts no slot (its timekeepers wait for a
// room, not for the clock); a room added later is stepped at the rate.
func TestSchedulerIdleWithoutRooms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(time.Second/60, timekeepers)
		testrun.GoRun(t, func(ctx context.Context) error { s.run(ctx); return nil })
		time.Sleep(time.Second)
		synctest.Wait()
		if n := s.cutNext.Load(); n != 0 {
			t.Fatalf("%d slots cut without a room, want 0", n)
		}
		r := &countStepper{}
		s.add(r)
		time.Sleep(time.Second)
		synctest.Wait()
		if n := r.passes.Load(); n < 59 || n > 61 {
			t.Fatalf("the room added was stepped %d times in a second, want 60", n)
		}
	})
}
