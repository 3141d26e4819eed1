package fleet

import (
	"context"
	"errors"
	"fmt"

	"github.com/muster-gg/muster/backplane"
)

// Kinds of units the built-in modules claim.
const (
	KindPlayer = "player"
	KindLobby  = "lobby"
)

// Claim records that this server runs the units kind/id of each id,
// replacing whoever held them, in one round trip (one per 1,000 ids, each
// with its own deadline, for more: maxKeysPerCall). The claims are held
// even when the write fails, and are re-asserted when the backplane
// returns; the error only reports that others cannot locate the units yet.
func (f *Fleet) Claim(ctx context.Context, kind string, ids ...string) error {
	keys := keysOf(kind, ids)
	if err := backplane.ValidateClaim(f.cfg.NodeID, keys...); err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	return f.writeClaims(ctx, "claim", keys, f.holdLocked, f.bp.Claim)
}

// writeClaims marks each of keys held or not (holdLocked or dropLocked)
// and cancels their queued releases, which the write supersedes, then
// writes them with write in one round trip per maxKeysPerCall keys; op
// names it in an error.
func (f *Fleet) writeClaims(ctx context.Context, op string, keys []backplane.Key,
	markLocked func(backplane.Key), write func(context.Context, string, ...backplane.Key) error) error {
	f.mu.Lock()
	for _, k := range keys {
		markLocked(k)
		if f.writing == nil {
			f.writing = make(map[backplane.Key]int)
		}
		f.writing[k]++
	}
	f.cancelPendingLocked(keys)
	f.mu.Unlock()
	err := f.inChunks(ctx, keys, func(ctx context.Context, chunk []backplane.Key) error {
		return write(ctx, f.cfg.NodeID, chunk...)
	})
	f.mu.Lock()
	for _, k := range keys {
		if f.writing[k]--; f.writing[k] <= 0 {
			delete(f.writing, k)
		}
		if f.claimedDuring != nil {
			f.claimedDuring[k] = true
		}
	}
	f.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, describe(keys), err)
	}
	return nil
}

// keysOf returns the keys kind/id of ids.
func keysOf(kind string, ids []string) []backplane.Key {
	keys := make([]backplane.Key, len(ids))
	for i, id := range ids {
		keys[i] = backplane.Key{Kind: kind, ID: id}
	}
	return keys
}

// describe names keys in an error: the key, or the first and how many.
func describe(keys []backplane.Key) string {
	if len(keys) == 1 {
		return keys[0].String()
	}
	return fmt.Sprintf("%s and %d more", keys[0], len(keys)-1)
}

// ClaimUnique claims kind/id for this server unless another live server
// holds it, in which case it returns ErrHeld. Of any number of servers
// racing for one id exactly one wins. A dead server's claim is taken over.
func (f *Fleet) ClaimUnique(ctx context.Context, kind, id string) error {
	key := backplane.Key{Kind: kind, ID: id}
	cctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
	defer cancel()
	holder, err := f.bp.ClaimUnique(cctx, f.cfg.NodeID, key)
	if err != nil {
		return fmt.Errorf("claim %s: %w", key, err)
	}
	if holder != f.cfg.NodeID {
		return fmt.Errorf("claim %s: %w (%s)", key, ErrHeld, holder)
	}
	f.mu.Lock()
	f.holdLocked(key)
	f.cancelPendingLocked([]backplane.Key{key})
	f.mu.Unlock()
	return nil
}

// Release gives up this server's claims on kind/id of each id, in one
// round trip. It never removes another server's claim.
func (f *Fleet) Release(ctx context.Context, kind string, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	return f.writeClaims(ctx, "release", keysOf(kind, ids), f.dropLocked, f.bp.Release)
}

// Holds reports whether this server holds a claim on kind/id.
func (f *Fleet) Holds(kind, id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.absorbLocked()
	return f.held[backplane.Key{Kind: kind, ID: id}]
}

// Locate returns the live server that holds kind/id, or ErrNotFound.
func (f *Fleet) Locate(ctx context.Context, kind, id string) (Node, error) {
	key := backplane.Key{Kind: kind, ID: id}
	if f.Holds(kind, id) {
		return f.Self(), nil
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
	defer cancel()
	owner, err := f.bp.Locate(ctx, key)
	if errors.Is(err, backplane.ErrNotFound) {
		return Node{}, ErrNotFound
	}
	if err != nil {
		return Node{}, fmt.Errorf("locate %s: %w", key, err)
	}
	n, ok := f.Node(owner)
	if !ok {
		return Node{}, fmt.Errorf("locate %s: %w: holder %s is not in view", key, ErrNotFound, owner)
	}
	return n, nil
}

// Arrive is what a server does when the unit kind/id arrives, in one round
// trip: it locates the unit and takes the handoff written for this server
// under id. holder is the live server that holds kind/id (this one
// included), the zero Node when none does; handoff is nil when there was
// none. A caller that sends the unit on to its holder passes the handoff
// on with PutHandoff. A handoff found is taken for good (confirmed) before
// Arrive returns, a second round trip; a call that gave up leaves it to
// the next one, as TakeHandoff says.
func (f *Fleet) Arrive(ctx context.Context, kind, id string) (holder Node, handoff []byte, err error) {
	if f.Holds(kind, id) {
		handoff, err = f.TakeHandoff(ctx, id)
		if errors.Is(err, ErrNotFound) {
			err = nil
		}
		return f.Self(), handoff, err
	}
	key := backplane.Key{Kind: kind, ID: id}
	actx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
	defer cancel()
	owner, taken, err := f.bp.Arrive(actx, key, f.cfg.NodeID, id, f.handoffHold())
	if err != nil {
		return Node{}, nil, fmt.Errorf("arrive %s: %w", key, err)
	}
	f.confirmHandoff(ctx, f.cfg.NodeID, id, taken.Token)
	handoff = taken.Data
	if owner != "" {
		holder, _ = f.Node(owner) // a holder out of view is gone
	}
	return holder, handoff, nil
}

// reassert claims again every unit in the heartbeat's list (f.beat) and
// renews the claims' lease, in one round trip per maxKeysPerCall units. A
// unit some other live server claimed meanwhile is left to it, dropped
// from this server's claims, and reported to the OnClaimLost function.
// Run's goroutine only.
func (f *Fleet) reassert(ctx context.Context) {
	held := f.beat.keys
	f.mu.Lock()
	f.claimedDuring = make(map[backplane.Key]bool, len(f.writing))
	for k := range f.writing { // written perhaps after the store's answer
		f.claimedDuring[k] = true
	}
	f.mu.Unlock()
	var lost []backplane.Key
	err := f.inChunks(ctx, held, func(ctx context.Context, chunk []backplane.Key) error {
		l, err := f.bp.Reassert(ctx, f.cfg.NodeID, MissedHeartbeats*f.cfg.Heartbeat, chunk...)
		lost = append(lost, l...)
		return err
	})
	f.mu.Lock()
	claimed := f.claimedDuring
	f.claimedDuring = nil
	f.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil { // not cut short by the stop
			f.logger.Warn("re-assert claims; will retry at the next heartbeat", "claims", len(held), "err", err)
		}
		return
	}
	var lostSet map[backplane.Key]bool
	if len(lost) > 0 {
		lostSet = make(map[backplane.Key]bool, len(lost))
		for _, k := range lost {
			lostSet[k] = true
		}
	}
	f.mu.Lock()
	f.absorbLocked()
	fn := f.onLost
	var gone []backplane.Key
	for _, k := range lost {
		// A key claimed while the call was in flight was written over
		// the other server's claim, after the answer: it stays.
		if f.held[k] && !claimed[k] {
			f.dropLocked(k)
			gone = append(gone, k)
		}
	}
	// A unit released while the call was in flight may have been written
	// back: release it again. Those are the units of the list that are no
	// longer held, each of them in the log of what changed since the list
	// was taken; the log is gone over, not the list.
	var again bool
	f.scanned += len(lost) + len(f.heldLog)
	if !f.leaving {
		for k, now := range f.heldLog {
			if !now && f.beat.has(k) && !lostSet[k] {
				f.pending[k], again = true, true
			}
		}
	}
	f.mu.Unlock()
	if again {
		select {
		case f.flushKick <- struct{}{}:
		default:
		}
	}
	if len(gone) > 0 {
		f.logger.Info("claims now held by other servers were dropped", "count", len(gone))
	}
	if fn != nil {
		for _, k := range gone {
			fn(k.Kind, k.ID)
		}
	}
}
