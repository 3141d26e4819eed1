package room

import (
	"context"

	"github.com/muster-gg/muster/fleet"
)

// claimPlayers claims a room's players, in one round trip.
func (h *Host[Sim, Input, Player]) claimPlayers(ctx context.Context, ids []string) {
	if h.fleet == nil || len(ids) == 0 {
		return
	}
	h.dropQueuedReleases(ids)
	if err := h.fleet.Claim(ctx, fleet.KindPlayer, ids...); err != nil {
		h.logger.Warn("claim players; re-asserted when the backplane returns", "players", len(ids), "err", err)
	}
}

// releaseLocked queues the release of player id's claim, for handReleases
// to pass to the fleet, which writes it from its own goroutine, batched.
// It runs on step workers, and with h.mu held, in the same hold as the
// seat is dropped: a claim for a new seat, which needs h.mu to seat the
// player first, then finds the release queued and cancels it.
func (h *Host[Sim, Input, Player]) releaseLocked(id string) {
	if h.fleet == nil {
		return
	}
	h.relMu.Lock()
	h.relQ = append(h.relQ, id)
	h.relMu.Unlock()
}

// kickReleases wakes handReleases.
func (h *Host[Sim, Input, Player]) kickReleases() {
	select {
	case h.relKick <- struct{}{}:
	default:
	}
}

// handReleases passes the queued releases to the fleet until ctx ends.
func (h *Host[Sim, Input, Player]) handReleases(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			h.handOverReleases()
			return
		case <-h.relKick:
			h.handOverReleases()
		}
	}
}

// handOverReleases passes the queued releases to the fleet.
func (h *Host[Sim, Input, Player]) handOverReleases() {
	h.claimMu.Lock()
	defer h.claimMu.Unlock()
	h.relMu.Lock()
	ids := h.relQ
	h.relQ = h.relSpare[:0]
	h.relMu.Unlock()
	if len(ids) > 0 {
		h.fleet.ReleaseLater(fleet.KindPlayer, ids...)
	}
	clear(ids)
	h.relMu.Lock()
	h.relSpare = ids[:0]
	h.relMu.Unlock()
}
