package federation

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/muster-gg/muster/backplane"
)

// limiter counts requests in fixed windows on the backplane, so that every
// Home on one store counts once, and falls back to its own memory when the
// backplane has no counters or cannot be reached.
type limiter struct {
	bp  backplane.Backplane
	now func() time.Time
	log *slog.Logger

	mu       sync.Mutex
	mem      map[string]memCount
	calls    int
	degraded bool // the last backplane call failed (logged once)
}

type memCount struct {
	n       int64
	expires time.Time
}

func newLimiter(bp backplane.Backplane, now func() time.Time, log *slog.Logger) *limiter {
	return &limiter{bp: bp, now: now, log: log, mem: make(map[string]memCount)}
}

// allow counts one request against key and reports whether it is within
// limit per window. A negative limit always allows.
func (l *limiter) allow(ctx context.Context, key string, limit int, window time.Duration) bool {
	if limit < 0 {
		return true
	}
	n, err := l.bp.Increment(ctx, "federation.rl."+key, window, 1)
	if err == nil {
		l.mu.Lock()
		if l.degraded {
			l.degraded = false
			l.log.Info("federation: rate limits counted on the backplane again")
		}
		l.mu.Unlock()
		return n <= int64(limit)
	}
	return l.allowMemory(key, limit, window, err)
}

func (l *limiter) allowMemory(key string, limit int, window time.Duration, err error) bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.degraded && !errors.Is(err, backplane.ErrUnsupported) {
		l.degraded = true
		l.log.Warn("federation: rate limits counted in memory while the backplane fails", "err", err)
	}
	l.calls++
	if l.calls%1024 == 0 {
		for k, c := range l.mem {
			if !now.Before(c.expires) {
				delete(l.mem, k)
			}
		}
	}
	c := l.mem[key]
	if !now.Before(c.expires) {
		c = memCount{expires: now.Add(window)}
	}
	c.n++
	l.mem[key] = c
	return c.n <= int64(limit)
}
