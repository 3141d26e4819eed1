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
	log *slog.Logger
	mem *memCounter // the fallback

	mu       sync.Mutex
	degraded bool // the last backplane call failed (logged once)
}

func newLimiter(bp backplane.Backplane, now func() time.Time, log *slog.Logger) *limiter {
	return &limiter{bp: bp, log: log, mem: newMemCounter(now)}
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

// allowMemory counts in memory what the backplane could not count.
func (l *limiter) allowMemory(key string, limit int, window time.Duration, err error) bool {
	l.mu.Lock()
	if !l.degraded && !errors.Is(err, backplane.ErrUnsupported) {
		l.degraded = true
		l.log.Warn("federation: rate limits counted in memory while the backplane fails", "err", err)
	}
	l.mu.Unlock()
	n, _ := l.mem.Increment(context.Background(), key, window, 1)
	return n <= int64(limit)
}

// memCounter is a room.Counter in memory, for one process: the fallback
// of both the limiter and the TokenChecker.
type memCounter struct {
	now   func() time.Time
	mu    sync.Mutex
	m     map[string]memCount
	calls int
}

type memCount struct {
	n       int64
	expires time.Time
}

func newMemCounter(now func() time.Time) *memCounter {
	return &memCounter{now: now, m: make(map[string]memCount)}
}

// Increment implements room.Counter. Expired counts are swept every 1024
// calls.
func (m *memCounter) Increment(_ context.Context, key string, ttl time.Duration, by int64) (int64, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.calls++; m.calls%1024 == 0 {
		for k, c := range m.m {
			if !now.Before(c.expires) {
				delete(m.m, k)
			}
		}
	}
	c := m.m[key]
	if !now.Before(c.expires) {
		c = memCount{expires: now.Add(ttl)}
	}
	c.n += by
	m.m[key] = c
	return c.n, nil
}
