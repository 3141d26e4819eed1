package room

import (
	"context"
	"sync/atomic"
	"time"
)

// reportLoad publishes the load, and the "rooms" and "players" stats, to
// the server every second.
func (h *Host[Sim, Input, Player]) reportLoad(ctx context.Context) {
	if h.server == nil {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		st := h.Stats()
		h.server.SetLoad(st.Load)
		h.server.SetStat("rooms", int64(st.Rooms))
		h.server.SetStat("players", int64(st.Connected))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Load returns the sum of the rooms' loads (the game's LoadOf, or the
// seated players).
func (h *Host[Sim, Input, Player]) Load() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	total := 0
	for _, r := range h.rooms {
		total += int(r.load.Load())
	}
	return total
}

// Stats is a snapshot of a Host's counters, for metrics.
type Stats struct {
	// Rooms is the number of running rooms.
	Rooms int
	// Seated is the number of players with a seat, present or away.
	Seated int
	// Connected is the number of players connected to this host, but for
	// those whose connection it is closing: a player redirected away
	// counts on the server it goes to, not here as well until its old
	// connection's close handshake is over.
	Connected int
	// Load is the sum of the rooms' loads.
	Load int
	// Redirects counts the clients sent to another server, by reason.
	Redirects map[string]uint64
	// Handoffs counts the handoffs written for players moved away.
	Handoffs uint64
	// Limited counts the connections closed (StatusLimited) for sending
	// more messages than Limits.Messages and Limits.Burst allow.
	Limited uint64
	// Moves counts the rooms moved to and from other servers, and the
	// moves' pauses.
	Moves MoveStats
	// Checkpoints counts the rooms' checkpoints written and skipped, and
	// the rooms resumed here from a dead server's checkpoints.
	Checkpoints CheckpointStats
}

// Stats returns the host's counters.
func (h *Host[Sim, Input, Player]) Stats() Stats {
	st := Stats{Load: h.Load(), Redirects: map[string]uint64{}, Handoffs: h.handoffs.Load(), Limited: h.limited.Load(), Moves: h.moves.stats(), Checkpoints: h.ckStats.stats()}
	h.mu.Lock()
	st.Rooms, st.Seated = len(h.rooms), len(h.seated)
	st.Connected = h.connectedLocked()
	h.mu.Unlock()
	h.redirects.Range(func(k, v any) bool {
		st.Redirects[k.(string)] = v.(*atomic.Uint64).Load()
		return true
	})
	return st
}

// Rooms returns the number of running rooms.
func (h *Host[Sim, Input, Player]) Rooms() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.rooms)
}

// Lateness returns the quantile q (0.99 for p99) of how late room steps
// started after they were due, and the number of steps measured. Steps
// owed while a room waited (a worker stalled, a pass that ran long) and
// steps dropped by MaxCatchUp count, each as late as it was; the
// histogram reaches about 2 s.
func (h *Host[Sim, Input, Player]) Lateness(q float64) (time.Duration, uint64) {
	return h.sched.lateness(q)
}

// ResetLateness forgets the lateness measured so far, e.g. after warm-up.
func (h *Host[Sim, Input, Player]) ResetLateness() { h.sched.resetLateness() }

// closing reports whether the host is closing c's connection (a redirect,
// a cut), or is about to redirect it: the player is on its way out.
func (c *Client) closing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeCode != 0 || c.going
}

// uncount stops counting cs as connected here and writes the server's
// "players" stat to the fleet before c is told to go: the others read the
// lower count before the player can reach another server and count there.
// A server cut off from the backplane sends the player on without it (its
// next heartbeat that reaches the backplane carries the change).
func (h *Host[Sim, Input, Player]) uncount(ctx context.Context, cs ...*Client) {
	for _, c := range cs {
		c.mu.Lock()
		c.going = true
		c.mu.Unlock()
	}
	if h.server == nil || len(cs) == 0 {
		return
	}
	h.mu.Lock()
	n := h.connectedLocked()
	h.mu.Unlock()
	h.server.SetStat("players", int64(n))
	if err := h.server.Publish(ctx); err != nil {
		h.logger.Debug("publish the players stat before a redirect; the next heartbeat does", "players", len(cs), "err", err)
	}
}

// connectedLocked counts the clients connected here but for those on their
// way out. h.mu must be held.
func (h *Host[Sim, Input, Player]) connectedLocked() int {
	n := 0
	for _, c := range h.clients {
		if !c.closing() {
			n++
		}
	}
	return n
}
