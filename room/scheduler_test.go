package room

import (
	"sync/atomic"
	"testing"
	"time"
)

type nopStepper struct{ busy atomic.Bool }

func (*nopStepper) pass(uint64) bool         { return true }
func (s *nopStepper) busyFlag() *atomic.Bool { return &s.busy }
func (*nopStepper) lastTick() uint64         { return 0 }

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
