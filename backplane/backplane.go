package backplane

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Backplane is the store shared by the servers of one cluster.
//
// Every method takes a context and must return when it is done; an
// implementation that talks to a remote store must let the context's
// deadline bound the whole call, including the socket read. Implementations
// are safe for concurrent use.
type Backplane interface {
	// Heartbeat writes node's record so that it expires ttl after this
	// call, by the store's own clock, and returns the records of every live
	// node of the cluster, node's own included. It is one round trip.
	//
	// created reports that node had no live record before the call: on its
	// first heartbeat, after its record expired, or after the store lost
	// its state (a restarted Redis). A node that sees created on a later
	// heartbeat re-asserts its claims.
	Heartbeat(ctx context.Context, node Node, ttl time.Duration) (nodes []Node, created bool, err error)

	// Nodes returns the records of every live node of the cluster, in no
	// particular order. Its cost grows with the number of nodes in the
	// cluster, never with the size of the store.
	Nodes(ctx context.Context) ([]Node, error)

	// Leave removes node id's record at once. Its claims then point
	// nowhere. Removing an absent node is not an error.
	Leave(ctx context.Context, id string) error

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

	// Increment adds by to the counter key and returns its new value. The
	// first increment creates the counter and sets it to expire ttl later;
	// later increments leave the expiry alone, except that a counter found
	// without an expiry gets one again. A backplane without counters
	// returns ErrUnsupported.
	Increment(ctx context.Context, key string, ttl time.Duration, by int64) (int64, error)

	// PutRecord stores a durable record (no expiry) under id in the named
	// collection, replacing an earlier one.
	PutRecord(ctx context.Context, collection, id string, data []byte) error

	// Record returns the record id of the collection, or ErrNotFound.
	Record(ctx context.Context, collection, id string) ([]byte, error)

	// DeleteRecord removes record id from the collection. Removing an
	// absent record is not an error.
	DeleteRecord(ctx context.Context, collection, id string) error

	// Records returns every record of the collection, keyed by id.
	Records(ctx context.Context, collection string) (map[string][]byte, error)

	// Close releases the backplane's resources. Calls made after Close
	// return ErrClosed. Close is safe to call more than once.
	Close() error
}

// Node is one server's entry in the registry. The backplane treats Data as
// opaque; the fleet package defines what it holds.
type Node struct {
	// ID identifies the node within its cluster.
	ID string
	// Data is the node's encoded record.
	Data []byte
	// TTL, when positive, is how long the record had left to live when
	// the store answered, by the store's clock: a reader may count the
	// node as gone once that long has passed without a newer answer, and
	// so drop a dead node when its record expires rather than at its own
	// next heartbeat after that. Heartbeat reports it at least for every
	// record with less than half the caller's ttl left (its node has
	// missed heartbeats) and may report it for every record. Zero means
	// longer than that, or not reported: Nodes need not report it.
	TTL time.Duration
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

// Key names a claimable unit: a kind such as "player" or "lobby" and an id
// unique within that kind.
type Key struct {
	Kind string
	ID   string
}

// String returns the key as "kind/id".
func (k Key) String() string { return k.Kind + "/" + k.ID }

// ValidateName reports whether s may be used as a cluster name, node id,
// claim kind or collection: non-empty, at most 256 bytes, and free of the
// characters the stores use as separators and hash tags.
func ValidateName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("backplane: %s is empty", what)
	case len(s) > 256:
		return fmt.Errorf("backplane: %s is longer than 256 bytes", what)
	case strings.ContainsAny(s, "{}:\x00"):
		return fmt.Errorf("backplane: %s %q contains one of { } : or NUL", what, s)
	}
	return nil
}

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
