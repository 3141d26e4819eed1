package room

import "time"

// A game's timers (a turn's time limit, a grace period for a player who
// went away) belong in its Sim and count the room's steps, not the wall
// clock: they advance only when the room is stepped, fire on the step
// they are due whatever the worker's lateness (a room catching up runs
// its missed steps, and its timers with them), and under testing/synctest
// they are exact. Timer is that countdown; a game keeps one per thing it
// times and asks Fired in FixedStep:
//
//	func (Game) Input(r *room.Room[*Match, Move, *Seat], s *Seat, m Move) {
//		...
//		r.Sim().turn.Start(r, 10*time.Second) // the next player's turn
//	}
//
//	func (Game) FixedStep(r *room.Room[*Match, Move, *Seat]) {
//		if r.Sim().turn.Fired(r) {
//			// the player to move ran out of time
//		}
//	}

// StepClock is what a Timer reads of a room: the step it is on and the
// length of a step. *Room implements it.
type StepClock interface {
	Step() uint64
	Dt() time.Duration
}

// Timer is a countdown in the steps of a room. Its zero value is stopped.
// A Timer belongs to one room's Sim: it is used only from the room's
// hooks, like the rest of the Sim.
type Timer struct {
	due uint64 // the step it fires on
	on  bool
}

// Start (re)starts the timer to fire d from now: on the step that
// completes d, counted from the step running (in FixedStep) or the last
// one run (in the other hooks). A d that is not a whole number of steps
// is rounded up; a d of zero or less fires on the next step.
func (t *Timer) Start(c StepClock, d time.Duration) {
	n := uint64(1)
	if dt := c.Dt(); d > 0 && dt > 0 {
		n = max(1, uint64((d+dt-1)/dt))
	}
	t.due, t.on = c.Step()+n, true
}

// Stop stops the timer; it will not fire.
func (t *Timer) Stop() { t.on = false }

// Running reports whether the timer was started and has neither fired
// nor been stopped.
func (t *Timer) Running() bool { return t.on }

// Fired reports whether the timer is due at c's step, once: it stops
// the timer when it reports true. Call it from FixedStep, every step.
func (t *Timer) Fired(c StepClock) bool {
	if !t.on || c.Step() < t.due {
		return false
	}
	t.on = false
	return true
}

// Left returns the time until the timer fires (zero when it is stopped
// or due), for the game to show its players.
func (t *Timer) Left(c StepClock) time.Duration {
	if !t.on || c.Step() >= t.due {
		return 0
	}
	return time.Duration(t.due-c.Step()) * c.Dt()
}
