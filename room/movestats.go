package room

import (
	"sync"
	"sync/atomic"
	"time"
)

// MovePauseBounds are the upper bounds, in seconds, of the buckets of
// Stats.MovePause.
var MovePauseBounds = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// MoveStats are a host's counts of rooms moved (Migrator), for metrics.
type MoveStats struct {
	// Moved counts the rooms this host moved to another server.
	Moved uint64
	// Failed counts the rooms it tried to move that stayed.
	Failed uint64
	// Received counts the rooms other servers moved here.
	Received uint64
	// Pause is the histogram of the moves' pauses: from the room's
	// freeze here to the other server's answer that it runs there.
	// Counts[i] is the number of pauses of at most MovePauseBounds[i]
	// seconds (cumulative); Count and Sum (seconds) are over all.
	Pause PauseHistogram
}

// PauseHistogram is a cumulative histogram of durations, in seconds.
type PauseHistogram struct {
	Counts []uint64
	Count  uint64
	Sum    float64
}

// moveStats counts a host's moves.
type moveStats struct {
	moved, failed, received atomic.Uint64

	mu     sync.Mutex
	counts []uint64 // per bucket, not cumulative; one more for +Inf
	count  uint64
	sum    float64
}

// record counts a room moved after pause.
func (m *moveStats) record(pause time.Duration) {
	m.moved.Add(1)
	s := pause.Seconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = make([]uint64, len(MovePauseBounds)+1)
	}
	i := 0
	for i < len(MovePauseBounds) && s > MovePauseBounds[i] {
		i++
	}
	m.counts[i]++
	m.count++
	m.sum += s
}

// stats returns the counts.
func (m *moveStats) stats() MoveStats {
	st := MoveStats{Moved: m.moved.Load(), Failed: m.failed.Load(), Received: m.received.Load()}
	m.mu.Lock()
	defer m.mu.Unlock()
	st.Pause = PauseHistogram{Counts: make([]uint64, len(MovePauseBounds)), Count: m.count, Sum: m.sum}
	var acc uint64
	for i := range MovePauseBounds {
		if m.counts != nil {
			acc += m.counts[i]
		}
		st.Pause.Counts[i] = acc
	}
	return st
}
