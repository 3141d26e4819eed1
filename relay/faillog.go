package relay

import (
	"sync"
	"time"
)

// failLogEvery is how often the failure to relay to one node is logged at
// most: a client repeating an upgrade for a node that is down, or one that
// fails every handshake, makes one line a minute, not one a request.
const failLogEvery = time.Minute

// maxFailLogNodes bounds the nodes failLog remembers; past it, those whose
// last line is older than failLogEvery are forgotten with their counts.
const maxFailLogNodes = 1024

// failLog decides which failures to relay to a node are logged: the first,
// and then the first after each failLogEvery, which reports how many were
// not logged since the line before. It is safe for concurrent use.
type failLog struct {
	mu    sync.Mutex
	nodes map[string]*nodeFailures
}

type nodeFailures struct {
	logged     time.Time // when the last line was logged
	suppressed int       // failures since, not logged
}

// failed records a failure to relay to node at now, and reports whether to
// log it and how many failures before it were not logged since the last
// line.
func (f *failLog) failed(node string, now time.Time) (log bool, suppressed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nodes == nil {
		f.nodes = make(map[string]*nodeFailures)
	}
	n := f.nodes[node]
	if n == nil {
		if len(f.nodes) >= maxFailLogNodes {
			for id, old := range f.nodes {
				if now.Sub(old.logged) >= failLogEvery {
					delete(f.nodes, id)
				}
			}
		}
		f.nodes[node] = &nodeFailures{logged: now}
		return true, 0
	}
	if d := now.Sub(n.logged); d >= 0 && d < failLogEvery {
		n.suppressed++
		return false, 0
	}
	suppressed = n.suppressed
	n.logged, n.suppressed = now, 0
	return true, suppressed
}
