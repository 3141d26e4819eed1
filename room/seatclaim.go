package room

import (
	"context"
	"fmt"
	"slices"

	"github.com/muster-gg/muster/fleet"
)

// A player is seated in at most one room of the fleet at any instant: a
// seat is claimed before it is taken. OpenRoom and Seat claim their
// players first (claimSeats), each only if no other live server holds
// it, in one round trip; of two servers seating one player at once
// exactly one wins, and the other seats nobody: OpenRoom and Seat fail
// with ErrSeated, which a lobby's start reports to its host and a
// match's room leaves its players waiting on. When the backplane cannot
// answer, the players are seated as claimed, as on one server: the claims
// are re-asserted when it returns, and a player another server seated
// meanwhile is then removed from one of the rooms (claimLost).

// claimSeats claims ids, players about to be seated here, for this
// server, unless another live server holds one of them: then it gives the
// claims it won back and returns an error wrapping ErrSeated that names
// that player (op names the call). It returns nil when the backplane
// cannot answer.
func (h *Host[Sim, Input, Player]) claimSeats(ctx context.Context, op string, ids []string) error {
	if h.fleet == nil || len(ids) == 0 {
		return nil
	}
	h.dropQueuedReleases(ids)
	held, err := h.fleet.ClaimFree(ctx, fleet.KindPlayer, ids...)
	if err != nil {
		h.logger.Warn("claim players before seating them; seated as claimed, re-asserted when the backplane returns", "players", len(ids), "err", err)
		return nil
	}
	if len(held) == 0 {
		return nil
	}
	h.mu.Lock()
	h.unclaimLocked(ids)
	h.mu.Unlock()
	h.kickReleases()
	return fmt.Errorf("%s: %w on another server: %s", op, ErrSeated, held[0])
}

// unclaimLocked gives back the claims of those of ids not seated here,
// claimed for seats that were not taken. h.mu must be held.
func (h *Host[Sim, Input, Player]) unclaimLocked(ids []string) {
	for _, id := range ids {
		if h.seated[id] == nil {
			h.releaseLocked(id)
		}
	}
}

// keepClaims makes sure this server holds the claims of ids, players it
// has just seated: a seat of theirs here that ended between claimSeats
// and the seating queued its release, which is dropped, or, if it reached
// the fleet already, claimed over again (as claimPlayers claims).
func (h *Host[Sim, Input, Player]) keepClaims(ctx context.Context, ids []string) {
	if h.fleet == nil {
		return
	}
	h.dropQueuedReleases(ids)
	var lost []string
	for _, id := range ids {
		if !h.fleet.Holds(fleet.KindPlayer, id) {
			lost = append(lost, id)
		}
	}
	h.claimPlayers(ctx, lost)
}

// dropQueuedReleases drops ids from the releases queued for the fleet,
// after a hand-over in progress: a player whose seat ended a moment ago
// may still have its release queued, which must not reach the fleet after
// a claim of a new seat, or the claim is lost.
func (h *Host[Sim, Input, Player]) dropQueuedReleases(ids []string) {
	h.claimMu.Lock()
	h.relMu.Lock()
	h.relQ = slices.DeleteFunc(h.relQ, func(id string) bool { return slices.Contains(ids, id) })
	h.relMu.Unlock()
	h.claimMu.Unlock()
}
