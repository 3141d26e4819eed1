package backplane

import (
	"context"
	"time"
)

// Counters is the role of a backplane that keeps atomic counters shared by
// the cluster, for fleet-wide tickets and rate limits.
type Counters interface {
	// Increment adds by to the counter key and returns its new value. The
	// first increment creates the counter and sets it to expire ttl later;
	// later increments leave the expiry alone, except that a counter found
	// without an expiry gets one again. A backplane without counters
	// returns ErrUnsupported.
	Increment(ctx context.Context, key string, ttl time.Duration, by int64) (int64, error)
}
