package room

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/muster-gg/muster/internal/addrkey"
	"github.com/muster-gg/muster/internal/defaults"
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

	// Open is how many connections an address may hold open at once on
	// this server (Connects bounds how fast it opens them, not how many
	// it keeps): those the host serves, and those the server's relay
	// relays through it to another server (see HoldOpen); one more is
	// refused as a connect over the rate is, with 429. It counts per
	// server whatever the Store. math.MaxInt caps nothing
	// (muster.room.limits.open: 0). Default 64: room for a household or
	// a school behind one NAT, far from the thousands of connections,
	// each with its goroutines and send queue, that one stranger could
	// hold otherwise.
	Open int `yaml:"open"`

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

// defaultLimits returns the documented defaults of Limits.
func defaultLimits() Limits {
	return Limits{
		Store: StoreMemory, Connects: 120, Window: time.Minute, Open: DefaultOpen,
		Failures: 20, Lockout: 5 * time.Minute, Messages: 120, Burst: 240,
	}
}

func (l Limits) withDefaults() (Limits, error) {
	defaults.Fill(&l, defaultLimits())
	switch {
	case l.Store != StoreMemory && l.Store != StoreBackplane:
		return l, configError("limits.store", "%q is neither memory nor backplane", l.Store)
	case l.Connects < 0:
		return l, configError("limits.connects", "%d is negative", l.Connects)
	case l.Open < 0:
		return l, configError("limits.open", "%d is negative", l.Open)
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

// DefaultOpen is Limits.Open's default.
const DefaultOpen = 64

// limiter applies Limits with a Counter, and Limits.Open with counts of
// its own.
type limiter struct {
	cfg     Limits
	counter Counter

	mu   sync.Mutex
	open map[string]int // addrkey → connections open on this server
}

// hold counts a connection from ip as open until release(ip), and reports
// whether it may be: false, holding nothing, when the addrkey of ip holds
// Limits.Open connections already.
func (l *limiter) hold(ip string) bool {
	if l.cfg.Open == math.MaxInt {
		return true
	}
	key := addrkey.Of(ip)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key] >= l.cfg.Open {
		return false
	}
	if l.open == nil {
		l.open = make(map[string]int)
	}
	l.open[key]++
	return true
}

// release lets go of a connection from ip that hold counted.
func (l *limiter) release(ip string) {
	if l.cfg.Open == math.MaxInt {
		return
	}
	key := addrkey.Of(ip)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key]--; l.open[key] <= 0 {
		delete(l.open, key)
	}
}

// held returns how many connections the addrkey of ip holds open.
func (l *limiter) held(ip string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[addrkey.Of(ip)]
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
