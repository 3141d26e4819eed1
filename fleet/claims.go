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

// Claim records that this server runs the unit kind/id, replacing whoever
// held it. The claim is held even when the write fails, and is re-asserted
// when the backplane returns; the error only reports that others cannot
// locate the unit yet.
func (f *Fleet) Claim(ctx context.Context, kind, id string) error {
	key := backplane.Key{Kind: kind, ID: id}
	if err := backplane.ValidateClaim(f.cfg.NodeID, key); err != nil {
		return err
	}
	f.mu.Lock()
	f.held[key] = true
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
	defer cancel()
	if err := f.bp.Claim(ctx, f.cfg.NodeID, key); err != nil {
		return fmt.Errorf("claim %s: %w", key, err)
	}
	return nil
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
	f.held[key] = true
	f.mu.Unlock()
	return nil
}

// Release gives up this server's claim on kind/id. It never removes
// another server's claim.
func (f *Fleet) Release(ctx context.Context, kind, id string) error {
	key := backplane.Key{Kind: kind, ID: id}
	f.mu.Lock()
	delete(f.held, key)
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
	defer cancel()
	if err := f.bp.Release(ctx, f.cfg.NodeID, key); err != nil {
		return fmt.Errorf("release %s: %w", key, err)
	}
	return nil
}

// Holds reports whether this server holds a claim on kind/id.
func (f *Fleet) Holds(kind, id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
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

// reassert claims again every unit in held, after the backplane came back
// or lost its state. A unit some other live server claimed meanwhile is
// left to it and dropped from this server's claims.
func (f *Fleet) reassert(ctx context.Context, held map[backplane.Key]bool) {
	lostTo := 0
	for key := range held {
		cctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
		holder, err := f.bp.ClaimUnique(cctx, f.cfg.NodeID, key)
		cancel()
		if err != nil {
			f.logger.Warn("re-assert claims; will retry when the backplane returns", "err", err)
			f.mu.Lock()
			f.attached = false // the next heartbeat that succeeds tries again
			f.mu.Unlock()
			return
		}
		if holder != f.cfg.NodeID {
			lostTo++
			f.mu.Lock()
			delete(f.held, key)
			f.mu.Unlock()
		}
	}
	if lostTo > 0 {
		f.logger.Info("claims now held by other servers were dropped", "count", lostTo)
	}
}
