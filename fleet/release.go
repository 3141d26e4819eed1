package fleet

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/muster-gg/muster/backplane"
)

// ReleaseLater gives up this server's claims on kind/id of each id without
// waiting for the backplane: it never blocks and does no I/O on the
// caller, so a room's step worker may call it. The claims stop being held
// at once (Holds reports false, and no re-assertion brings them back); a
// goroutine that Run owns writes the queued releases, every release queued
// by then in one round trip (per maxKeysPerCall), and keeps those that
// fail queued to retry them. Leaving the fleet releases whatever is still
// queued with the rest. Claiming an id again before its release is written
// cancels the release.
func (f *Fleet) ReleaseLater(kind string, ids ...string) {
	if len(ids) == 0 {
		return
	}
	f.relMu.Lock()
	for _, id := range ids {
		f.relQ[backplane.Key{Kind: kind, ID: id}] = true
	}
	f.relMu.Unlock()
	select {
	case f.flushKick <- struct{}{}:
	default:
	}
}

// absorbLocked moves the releases ReleaseLater queued into held and
// pending. f.mu must be held.
func (f *Fleet) absorbLocked() {
	f.relMu.Lock()
	for k := range f.relQ {
		f.dropLocked(k)
		f.pending[k] = true
	}
	clear(f.relQ)
	f.relMu.Unlock()
}

// OnClaimLost sets fn to be called, for each claim, when re-assertion finds
// that another server now holds a claim this server held (the others took
// the unit over while this server was cut off or frozen). This server no
// longer holds it when fn runs: the caller should end its part in the unit,
// as if the player had left. fn runs on the fleet's own goroutine, so it
// must not block and must not call back into the backplane; hand the work
// to another goroutine. Set it before Run; a later call replaces it.
func (f *Fleet) OnClaimLost(fn func(kind, id string)) {
	f.mu.Lock()
	f.onLost = fn
	f.mu.Unlock()
}

// Pending returns how many releases queued by ReleaseLater are not yet
// written to the backplane.
func (f *Fleet) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.absorbLocked()
	return len(f.pending)
}

// cancelPendingLocked drops keys from the queued releases, because they are
// claimed again. f.mu must be held.
func (f *Fleet) cancelPendingLocked(keys []backplane.Key) {
	f.relMu.Lock()
	for _, k := range keys {
		delete(f.pending, k)
		delete(f.relQ, k)
	}
	f.relMu.Unlock()
}

// flushLoop writes queued releases until stop is closed: at once when
// ReleaseLater queues one, and again every heartbeat while some failed.
func (f *Fleet) flushLoop(ctx context.Context, stop <-chan struct{}) {
	retry := time.NewTimer(f.cfg.Heartbeat)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-stop:
			return
		case <-f.flushKick:
		case <-retry.C:
		}
		if !f.flush(ctx) {
			retry.Reset(f.cfg.Heartbeat)
		}
	}
}

// flush writes every queued release in one round trip per maxKeysPerCall.
// It reports false when releases remain queued because the write failed.
func (f *Fleet) flush(ctx context.Context) bool {
	f.mu.Lock()
	f.absorbLocked()
	if f.leaving || len(f.pending) == 0 {
		f.mu.Unlock()
		return true
	}
	batch := slices.Collect(maps.Keys(f.pending))
	clear(f.pending)
	f.mu.Unlock()

	err := f.inChunks(ctx, batch, func(ctx context.Context, chunk []backplane.Key) error {
		return f.bp.Release(ctx, f.cfg.NodeID, chunk...)
	})

	f.mu.Lock()
	// An id claimed again while the release was in flight: its claim may
	// have been written before the release removed it.
	var reclaim []backplane.Key
	for _, k := range batch {
		switch {
		case f.held[k]:
			reclaim = append(reclaim, k)
		case err != nil && !f.leaving:
			f.pending[k] = true
		}
	}
	f.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil { // cut short by the stop: leaving writes them
			f.logger.Warn("release claims; will retry", "claims", len(batch), "err", err)
		}
		return false
	}
	if len(reclaim) > 0 {
		err := f.inChunks(ctx, reclaim, func(ctx context.Context, chunk []backplane.Key) error {
			return f.bp.Claim(ctx, f.cfg.NodeID, chunk...)
		})
		if err != nil {
			f.logger.Warn("claim again what was claimed during a release; the next re-assertion writes it", "claims", len(reclaim), "err", err)
		}
	}
	return true
}
