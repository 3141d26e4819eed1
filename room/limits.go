package room

import (
	"context"
	"time"

	"github.com/muster-gg/muster/internal/addrkey"
)

// Where rate limits and lockouts count.
const (
	StoreMemory    = "memory"
	StoreBackplane = "backplane"
)

// Limits are the connection rate limits and failure lockouts, per client
// IP address. An IPv4 address (or an IPv4-mapped IPv6 address) counts
// whole; an IPv6 address counts by its /64 prefix, the smallest network a
// customer is given, so that one stranger's 2^64 addresses are one
// address here.
type Limits struct {
	// Store is where the counts are kept: "memory" (each server counts on
	// its own) or "backplane" (once for the fleet, falling back to memory
	// while the backplane is away). Default "memory".
	Store string `yaml:"store"`

	// Connects is how many connections an address may open per Window.
	// Default 120.
	Connects int `yaml:"connects"`

	// Window is the rate limit's window, at most 24h. Default 1m.
	Window time.Duration `yaml:"window"`

	// Failures is how many failed hellos (bad tickets) lock an address out.
	// Default 20.
	Failures int `yaml:"failures"`

	// Lockout is how long a locked-out address is refused, at most 24h.
	// Default 5m.
	Lockout time.Duration `yaml:"lockout"`

	// Messages is how many messages a connection may send per second on
	// average (a token bucket); one that sends faster is closed with
	// StatusLimited (4005). Default 120: twice a 60 Hz input stream.
	Messages int `yaml:"messages"`

	// Burst is how many messages a connection may send at once above the
	// average. Default 240.
	Burst int `yaml:"burst"`
}

func (l Limits) withDefaults() (Limits, error) {
	if l.Store == "" {
		l.Store = StoreMemory
	}
	if l.Connects == 0 {
		l.Connects = 120
	}
	if l.Window == 0 {
		l.Window = time.Minute
	}
	if l.Failures == 0 {
		l.Failures = 20
	}
	if l.Lockout == 0 {
		l.Lockout = 5 * time.Minute
	}
	if l.Messages == 0 {
		l.Messages = 120
	}
	if l.Burst == 0 {
		l.Burst = 240
	}
	switch {
	case l.Store != StoreMemory && l.Store != StoreBackplane:
		return l, configError("limits.store", "%q is neither memory nor backplane", l.Store)
	case l.Connects < 0:
		return l, configError("limits.connects", "%d is negative", l.Connects)
	case l.Failures < 0:
		return l, configError("limits.failures", "%d is negative", l.Failures)
	case l.Window < 0 || l.Window > 24*time.Hour:
		return l, configError("limits.window", "%s is outside 0-24h", l.Window)
	case l.Lockout < 0 || l.Lockout > 24*time.Hour:
		return l, configError("limits.lockout", "%s is outside 0-24h", l.Lockout)
	case l.Messages < 0:
		return l, configError("limits.messages", "%d is negative", l.Messages)
	case l.Burst < 0:
		return l, configError("limits.burst", "%d is negative", l.Burst)
	}
	return l, nil
}

// limiter applies Limits with a Counter.
type limiter struct {
	cfg     Limits
	counter Counter
}

// allowConnect counts a connection attempt from ip and reports whether it
// may go on: not locked out and within the rate. It counts ip by its
// addrkey.
func (l *limiter) allowConnect(ctx context.Context, ip string) bool {
	key := addrkey.Of(ip)
	if n, err := l.counter.Increment(ctx, "lockout:"+key, l.cfg.Lockout, 0); err == nil && n >= int64(l.cfg.Failures) {
		return false
	}
	n, err := l.counter.Increment(ctx, "connect:"+key, l.cfg.Window, 1)
	return err != nil || n <= int64(l.cfg.Connects) // a counter that fails does not lock players out
}

// failed counts a failed hello from ip towards the lockout of its addrkey.
func (l *limiter) failed(ctx context.Context, ip string) {
	l.counter.Increment(ctx, "lockout:"+addrkey.Of(ip), l.cfg.Lockout, 1)
}

// bucket is a connection's token bucket for its messages. Only the
// connection's reader uses it.
type bucket struct {
	tokens float64
	last   time.Time
}

// take takes a token for a message at now, refilling at rate per second
// up to burst, and reports whether there was one.
func (b *bucket) take(now time.Time, rate, burst int) bool {
	if b.last.IsZero() {
		b.tokens = float64(burst)
	} else {
		b.tokens = min(float64(burst), b.tokens+now.Sub(b.last).Seconds()*float64(rate))
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
