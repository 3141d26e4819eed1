package room

import (
	"context"
	"time"

	"github.com/muster-gg/muster/fleet"
)

// One connection per player across the fleet. A newer connection on this
// server replaces an older one here at once (register). On another server
// the claim on the player's connection (fleet.KindConn) carries it: each
// server claims the connections it accepts, the newest claim wins, and a
// server whose claim another live server took closes its connection with
// 4004 when its heartbeat's re-assertion finds the claim lost, within one
// heartbeat. While the backplane cannot answer, only this server's rule
// holds: the claim is written again every heartbeat until it is.

// connect claims c's player's connection for this server. It reports
// false when the claim could not be written (the backplane is slow or
// away): connectLater writes it again.
func (h *Host[Sim, Input, Player]) connect(ctx context.Context, c *Client) bool {
	if h.fleet == nil {
		return true
	}
	if err := h.fleet.Connect(ctx, c.id); err != nil {
		h.logger.Warn("claim the player's connection; will retry every heartbeat", "player_id", c.id, "err", err)
		return false
	}
	return true
}

// connectLater writes the claim on c's player's connection every
// heartbeat until it is written, stop is closed, c is closed, or a newer
// connection here replaced c (it claims for itself). h.fleet must be set.
func (h *Host[Sim, Input, Player]) connectLater(ctx context.Context, c *Client, stop <-chan struct{}) {
	every := h.fleet.Config().Heartbeat
	if every <= 0 { // a Fleet of the caller's own, without one
		every = 2 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-c.done:
			return
		case <-t.C:
		}
		select {
		case <-c.done:
			return // closed (sent on, replaced) while the ticker fired
		default:
		}
		if cur, _ := h.Client(c.id); cur != c {
			return
		}
		if h.fleet.Connect(ctx, c.id) == nil {
			return
		}
	}
}

// connLost closes the connection of player id here, whose newer
// connection another server claimed (StatusReplaced). It does not block:
// it runs on the fleet's goroutine.
func (h *Host[Sim, Input, Player]) connLost(id string) {
	if c, ok := h.Client(id); ok {
		c.Close(StatusReplaced, "replaced by a newer connection")
	}
}

// releaseConnLocked gives up the claim on the connection of player id,
// whose last connection here ended. h.mu must be held, in the same hold
// as the connection is forgotten: a newer connection here, which needs
// h.mu to register, claims after it and so cancels the release.
func (h *Host[Sim, Input, Player]) releaseConnLocked(id string) {
	if h.fleet != nil {
		h.fleet.ReleaseLater(fleet.KindConn, id)
	}
}
