package fleet

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/muster-gg/muster/backplane"
)

// Increment adds by to the fleet-wide counter key and returns its new
// value; the first increment sets the counter to expire ttl later. It is
// what tickets, rate limits and lockouts count with, once for all servers.
//
// When the backplane has no counters (backplane.ErrUnsupported), or cannot
// be reached, the counter is kept in this server's memory instead: the
// count is then per server until the backplane is back. One failed count
// is enough: the next ones are kept in memory at once, without waiting for
// a backplane that just failed, until a heartbeat reaches it again. A new
// connection, which counts two or three times, so waits for at most one
// failed call, and only the first one after the backplane went away.
func (f *Fleet) Increment(ctx context.Context, key string, ttl time.Duration, by int64) (int64, error) {
	if f.countsShared() {
		cctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
		n, err := f.bp.Increment(cctx, key, ttl, by)
		cancel()
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, backplane.ErrUnsupported) {
			if ctx.Err() != nil {
				return 0, err
			}
			f.mu.Lock()
			f.countFailed = true
			f.mu.Unlock()
		}
	}
	return f.local.increment(key, ttl, by, time.Now()), nil
}

// countsShared reports whether Increment asks the backplane: while the
// last heartbeat reached it (or before the first one), unless a count
// failed since.
func (f *Fleet) countsShared() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return (f.attached || !f.beaten) && !f.countFailed
}

// localCounters is the in-memory fallback of Increment.
type localCounters struct {
	mu      sync.Mutex
	m       map[string]localCounter
	sweepAt int       // sweep expired counters when m grows to this size
	swept   time.Time // when they were last swept
	sweeps  int       // sweeps made, for tests
}

// minSweep is the size below which the counters are never swept, and
// sweepEvery how often they are swept above it even when they did not
// grow: the counters of a burst of new addresses go within a minute of
// expiring, not when as many new ones have come.
const (
	minSweep   = 4096
	sweepEvery = time.Minute
)

type localCounter struct {
	n       int64
	expires time.Time
}

// increment works as backplane.Backplane.Increment does, in memory.
func (c *localCounters) increment(key string, ttl time.Duration, by int64, now time.Time) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]localCounter)
	}
	// Memory is bounded without a goroutine: a sweep drops the expired
	// counters once m has doubled since the last one, or a minute after
	// it, so that it costs each increment O(1) however many counters are
	// live.
	if n := len(c.m); n >= minSweep && (n >= c.sweepAt || now.Sub(c.swept) >= sweepEvery) {
		for k, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
		c.sweepAt, c.swept = 2*len(c.m), now
		c.sweeps++
	}
	e, ok := c.m[key]
	if !ok || !now.Before(e.expires) {
		e = localCounter{expires: now.Add(ttl)}
	}
	e.n += by
	c.m[key] = e
	return e.n
}
