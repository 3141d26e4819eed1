package backplane

import (
	"context"
	"time"
)

// Handoffs is the role of a backplane that carries a unit's state from one
// node to another: a handoff is written for one target node and taken
// once, and a take holds it until its taker confirms it, so that a take
// whose caller gave up loses nothing.
type Handoffs interface {
	// Arrive is Locate(key) and TakeHandoff(target, id, hold) in one round
	// trip, for a unit arriving at node target: owner is "" when key is
	// unclaimed (and may be a dead node, as for Locate); taken.Data is nil
	// when no handoff is stored for target under id or it is held by
	// another take. The handoff is taken whoever holds key, on the terms of
	// TakeHandoff.
	Arrive(ctx context.Context, key Key, target, id string, hold time.Duration) (owner string, taken Taken, err error)

	// PutHandoff stores data for target under id, replacing an earlier
	// handoff with the same target and id, held or not: the replaced one's
	// takes can no longer confirm anything, and the new one can be taken
	// at once. It expires after ttl.
	PutHandoff(ctx context.Context, target, id string, data []byte, ttl time.Duration) error

	// TakeHandoff takes the handoff stored for target under id and holds it
	// for hold (at least a millisecond): it returns the data and the take's
	// token, and until the hold ends every other take gets ErrNotFound, so
	// that of racing callers exactly one gets it. The taker that has the
	// data removes the handoff for good with ConfirmHandoff. A handoff whose
	// take is not confirmed by the end of its hold can be taken again, with
	// the data and expiry it had: a caller that gave up waiting for the
	// answer (the store may still run the take later) or failed before it
	// could confirm loses nothing. The other side of it: a taker whose
	// confirm comes after its hold, when someone has taken the handoff
	// again, shares the data with that one; a caller picks a hold longer
	// than its take's answer and its confirm together can last. A hold
	// never makes a handoff outlive its ttl. A take gets ErrNotFound when
	// none is stored, after expiry, and after a confirmed take.
	TakeHandoff(ctx context.Context, target, id string, hold time.Duration) (Taken, error)

	// ConfirmHandoff removes for good the handoff stored for target under
	// id if token names its latest take, during its hold or after it,
	// until someone takes it again or PutHandoff replaces it; otherwise it
	// does nothing. It is idempotent, and removing an absent handoff is
	// not an error: a confirm that gave up may be sent again.
	ConfirmHandoff(ctx context.Context, target, id, token string) error
}

// Taken is a handoff taken by TakeHandoff or Arrive and held for its
// taker until ConfirmHandoff removes it or the hold ends.
type Taken struct {
	// Data is the handoff's data, empty but not nil for an empty handoff;
	// nil when Arrive took none.
	Data []byte
	// Token names the take for ConfirmHandoff; "" when Arrive took none.
	Token string
}
