package fleet

import (
	"strconv"
	"testing"
	"time"
)

// made is when the counters of these tests are made.
var made = time.Unix(1_000_000, 0)

// counting returns local counters holding n counters at 1, lockout:0 to
// lockout:n-1, made at made with ttl.
func counting(n int, ttl time.Duration) *localCounters {
	c := &localCounters{}
	for i := range n {
		c.increment("lockout:"+strconv.Itoa(i), ttl, 1, made)
	}
	return c
}

// The in-memory fallback of Increment sweeps expired counters only when it
// has doubled since its last sweep: with many live counters (connection
// attempts from many addresses while Redis is away) a count must not walk
// them all every time, under the one mutex every connection waits for.
func TestLocalCountersSweepRarely(t *testing.T) {
	const live = 20_000
	c, now := counting(live, time.Minute), made
	before := c.sweeps
	for i := range live {
		if n := c.increment("lockout:"+strconv.Itoa(i), time.Minute, 1, now); n != 2 {
			t.Fatalf("counter %d = %d, want 2", i, n)
		}
	}
	if n := c.sweeps - before; n > 1 {
		t.Errorf("%d sweeps over %d live counters in %d increments of them, want at most one", n, live, live)
	}
	// Expired counters still go: a minute later the next sweep leaves only
	// the new one.
	later := now.Add(time.Minute)
	for i := range 2 * live {
		c.increment("new:"+strconv.Itoa(i), time.Minute, 1, later)
	}
	if len(c.m) > 2*live+1 {
		t.Errorf("%d counters kept, want the %d expired ones swept", len(c.m), live)
	}
	if n := c.increment("lockout:1", time.Minute, 1, later); n != 1 {
		t.Errorf("an expired counter counts on from %d, want a fresh start at 1", n-1)
	}
}

// The counters of a burst go within a minute of expiring, even when the
// burst is not followed by as many new counters.
func TestLocalCountersSweptAfterABurst(t *testing.T) {
	c := counting(20_000, time.Minute)
	later := made.Add(2 * time.Minute) // every counter of the burst expired
	c.increment("one more", time.Minute, 1, later)
	if n := len(c.m); n > 1 {
		t.Errorf("%d counters kept after the burst's expired, want only the new one", n)
	}
}

// BenchmarkLocalIncrement counts with 20,000 live counters in memory.
func BenchmarkLocalIncrement(b *testing.B) {
	const live = 20_000
	c := counting(live, time.Hour)
	keys := make([]string, live)
	for i := range keys {
		keys[i] = "lockout:" + strconv.Itoa(i)
	}
	b.ResetTimer()
	for i := range b.N {
		c.increment(keys[i%live], time.Hour, 1, made)
	}
}
