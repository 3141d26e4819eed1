package room

import (
	"testing"
	"testing/synctest"
	"time"
)

// fakeClock is a StepClock at a step set by hand.
type fakeClock struct {
	step uint64
	dt   time.Duration
}

func (c *fakeClock) Step() uint64      { return c.step }
func (c *fakeClock) Dt() time.Duration { return c.dt }

// A Timer fires once, on the step that completes its duration (rounded up
// to whole steps), and not after Stop.
func TestTimerCountsSteps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		d     time.Duration
		fires uint64 // the step it fires on, started at step 10
	}{
		{name: "whole steps", d: 500 * time.Millisecond, fires: 15},
		{name: "rounded up", d: 510 * time.Millisecond, fires: 16},
		{name: "zero is the next step", d: 0, fires: 11},
		{name: "negative is the next step", d: -time.Second, fires: 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &fakeClock{step: 10, dt: 100 * time.Millisecond}
			var tm Timer
			tm.Start(c, tc.d)
			fired := []uint64{}
			for c.step = 11; c.step < 30; c.step++ {
				if tm.Fired(c) {
					fired = append(fired, c.step)
				}
			}
			if len(fired) != 1 || fired[0] != tc.fires {
				t.Fatalf("fired on steps %v, want once on %d", fired, tc.fires)
			}
			if tm.Running() || tm.Left(c) != 0 {
				t.Fatalf("after firing: running %v, left %v", tm.Running(), tm.Left(c))
			}
		})
	}
	t.Run("stopped", func(t *testing.T) {
		c := &fakeClock{step: 1, dt: time.Millisecond}
		var tm Timer
		tm.Start(c, 3*time.Millisecond)
		if got := tm.Left(c); got != 3*time.Millisecond {
			t.Fatalf("left %v, want 3ms", got)
		}
		tm.Stop()
		for c.step = 2; c.step < 10; c.step++ {
			if tm.Fired(c) {
				t.Fatalf("a stopped timer fired on step %d", c.step)
			}
		}
	})
}

// A Timer started in a room's hook fires on the room's step that
// completes it: at 10 Hz, one started on step 1 for half a second fires on
// step 6, whatever the worker's timing: the room's steps are its clock.
func TestTimerStepsWithTheRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newCounter()
		var tm Timer
		var firedOn []uint64
		g.onStep = func(r *Room[*csim, int, *cplayer]) {
			if r.Step() == 1 {
				tm.Start(r, 500*time.Millisecond)
			}
			if tm.Fired(r) {
				firedOn = append(firedOn, r.Step())
			}
		}
		h, err := New(g, Config{Rate: 10, Workers: 1}, quietLog)
		if err != nil {
			t.Fatal(err)
		}
		runHost(t, h)
		if _, err := h.OpenRoom(t.Context(), Info{ID: "a", Players: []string{"p1"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if len(firedOn) != 1 || firedOn[0] != 6 {
			t.Fatalf("fired on steps %v, want once on step 6", firedOn)
		}
	})
}
