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
// count is then per server until the backplane is back.
func (f *Fleet) Increment(ctx context.Context, key string, ttl time.Duration, by int64) (int64, error) {
	if f.Attached() || !f.beatenOnce() {
		cctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
		n, err := f.bp.Increment(cctx, key, ttl, by)
		cancel()
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, backplane.ErrUnsupported) && ctx.Err() != nil {
			return 0, err
		}
	}
	return f.local.increment(key, ttl, by, time.Now()), nil
}

func (f *Fleet) beatenOnce() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.beaten
}

// localCounters is the in-memory fallback of Increment.
type localCounters struct {
	mu sync.Mutex
	m  map[string]localCounter
}

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
	if len(c.m) > 4096 { // bound memory without a goroutine
		for k, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
	}
	e, ok := c.m[key]
	if !ok || !now.Before(e.expires) {
		e = localCounter{expires: now.Add(ttl)}
	}
	e.n += by
	c.m[key] = e
	return e.n
}
