package backplane

import (
	"context"
	"time"
)

// Claims is the role of a backplane that records which node runs a unit
// (a player, a lobby code): claims, each with a lease tied to its holder's
// liveness.
type Claims interface {
	// Claim records owner as the holder of every key, replacing whoever
	// held them. Each claim gets a lease tied to owner's liveness: it
	// expires when owner's record would, unless Reassert renews it (a claim
	// made while owner has no live record has no lease).
	Claim(ctx context.Context, owner string, keys ...Key) error

	// ClaimUnique records owner as the holder of key unless a live node
	// other than owner holds it already, and returns the holder after the
	// call: owner if the claim was won (or already held), the live holder
	// otherwise. A claim whose holder is no longer a live node is taken
	// over. Of any number of racing callers exactly one wins.
	ClaimUnique(ctx context.Context, owner string, key Key) (holder string, err error)

	// Reassert is ClaimUnique for every key in one round trip, and gives
	// each claim owner holds after the call a lease: it expires lease
	// later unless a later Reassert renews it, so that a claim whose
	// release was lost (a failover that dropped the write) stops pointing
	// anywhere within one lease. It returns the keys another live node
	// holds, which it leaves to them. A holder counts as live here as for
	// ClaimUnique.
	Reassert(ctx context.Context, owner string, lease time.Duration, keys ...Key) (lost []Key, err error)

	// Release removes the claim on each key that owner holds. It never
	// removes another node's claim; releasing a claim one does not hold is
	// not an error.
	Release(ctx context.Context, owner string, keys ...Key) error

	// Locate returns the node holding key, or ErrNotFound when the key is
	// unclaimed or its lease ran out. A claim may outlive, until its lease
	// ends, a holder that died or left without releasing it: the caller
	// judges whether owner is live by its view of the cluster, as the
	// fleet package does, so that a lookup stays one plain read.
	Locate(ctx context.Context, key Key) (owner string, err error)
}

// Key names a claimable unit: a kind such as "player" or "lobby" and an id
// unique within that kind.
type Key struct {
	Kind string
	ID   string
}

// String returns the key as "kind/id".
func (k Key) String() string { return k.Kind + "/" + k.ID }

// ValidateClaim checks a claim's owner and keys as every implementation
// must before writing them.
func ValidateClaim(owner string, keys ...Key) error {
	if err := ValidateName("claim owner", owner); err != nil {
		return err
	}
	for _, k := range keys {
		if err := ValidateName("claim kind", k.Kind); err != nil {
			return err
		}
		if k.ID == "" {
			return ErrEmptyID
		}
	}
	return nil
}
