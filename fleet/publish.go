package fleet

import (
	"context"
	"sync"
	"sync/atomic"
)

// recordWriter orders the writes of this server's record: a heartbeat's
// and Publish's. Each takes its snapshot of the record and writes it under
// mu, so a record written later never carries older stats.
type recordWriter struct {
	mu    sync.Mutex
	asked atomic.Uint64 // Publish calls so far
	// Under mu: the calls the last write attempted covers (its snapshot
	// was taken after them), and how it ended.
	covered uint64
	err     error
}

// Publish writes this server's record now, with the load and stats set so
// far, and returns once a write begun after the call has reached the
// backplane. A server that hands a player to another calls it before the
// player is told to go, so that the player never counts on both: the
// others read this server's new record before the one of the server the
// player reaches. Concurrent calls share one write. It returns ErrDetached,
// writing nothing, while the last heartbeat missed the backplane (the next
// one that reaches it carries the change), and nil once the server is
// leaving.
func (f *Fleet) Publish(ctx context.Context) error {
	mine := f.rec.asked.Add(1)
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	if f.rec.covered >= mine {
		// A write took its snapshot after this call: its answer is this
		// call's too (one stalled write, not one per caller).
		return f.rec.err
	}
	covers := f.rec.asked.Load()
	f.mu.Lock()
	leaving, detached := f.leaving, f.beaten && !f.attached
	self := f.selfLocked()
	f.mu.Unlock()
	switch {
	case leaving:
		return nil
	case detached:
		return ErrDetached
	}
	_, _, err := f.publish(ctx, self, MissedHeartbeats*f.cfg.Heartbeat)
	f.rec.covered, f.rec.err = covers, err
	return err
}
