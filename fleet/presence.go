package fleet

import (
	"context"
	"fmt"

	"github.com/muster-gg/muster/backplane"
)

// KindConn is the kind of the claim on a player's connection: the server
// that holds conn/<player> has the player's newest connection. A server
// that accepts a newer hello claims it over whoever held it (Connect); the
// older server finds the claim lost at its next heartbeat's re-assertion
// and closes its connection (the OnClaimLost function). A claim whose
// holder is not a live server (a forged or unknown node id, a dead
// server) is taken back at re-assertion, so it closes nothing.
const KindConn = "conn"

// Connect claims player id's connection for this server, replacing
// whoever held it, in one round trip: the newest connection wins. Unlike
// Claim it holds the claim only once it is written; a write that failed
// drops it, and the caller writes it again (Connect) until it succeeds.
// A claim held but not written would be re-asserted as a unit another
// live server holds, and so lost to the older connection. While the last
// heartbeat did not reach the backplane it writes nothing and returns
// ErrDetached: this server's record may have expired meanwhile, and the
// older server would take back the claim of a server not live.
func (f *Fleet) Connect(ctx context.Context, id string) error {
	key := backplane.Key{Kind: KindConn, ID: id}
	if err := backplane.ValidateClaim(f.cfg.NodeID, key); err != nil {
		return err
	}
	f.mu.Lock()
	attached := f.attached
	if !attached {
		f.dropLocked(key)
	}
	f.cancelPendingLocked([]backplane.Key{key})
	f.mu.Unlock()
	if !attached {
		return fmt.Errorf("connect %s: %w", key, ErrDetached)
	}
	cctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
	defer cancel()
	err := f.bp.Claim(cctx, f.cfg.NodeID, key)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.dropLocked(key)
		return fmt.Errorf("connect %s: %w", key, err)
	}
	f.holdLocked(key)
	return nil
}

// ClaimFree claims for this server each unit kind/id of ids that no other
// live server holds, in one round trip (per maxKeysPerCall ids), and
// returns the ids another live server holds, which it leaves to them (a
// dead server's claim is taken over). Of servers racing for one id exactly
// one wins it. A claim won is leased as the heartbeat's re-assertion
// leases it.
//
// When the backplane cannot answer, every id is held as Claim holds it
// (re-asserted when the backplane returns) and the error is returned: the
// caller goes on as if it had won them all.
func (f *Fleet) ClaimFree(ctx context.Context, kind string, ids ...string) (held []string, err error) {
	keys := keysOf(kind, ids)
	if err := backplane.ValidateClaim(f.cfg.NodeID, keys...); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, nil
	}
	f.mu.Lock()
	f.cancelPendingLocked(keys)
	f.mu.Unlock()
	var lost []backplane.Key
	err = f.inChunks(ctx, keys, func(ctx context.Context, chunk []backplane.Key) error {
		l, err := f.bp.Reassert(ctx, f.cfg.NodeID, MissedHeartbeats*f.cfg.Heartbeat, chunk...)
		lost = append(lost, l...)
		return err
	})
	if err != nil {
		lost = nil
		err = fmt.Errorf("claim %s: %w", describe(keys), err)
	}
	others := make(map[backplane.Key]bool, len(lost))
	for _, k := range lost {
		others[k] = true
		held = append(held, k.ID)
	}
	f.mu.Lock()
	for _, k := range keys {
		if !others[k] {
			f.holdLocked(k)
		}
	}
	f.mu.Unlock()
	return held, err
}
