package fleet

import (
	"cmp"
	"slices"
	"time"
)

// Nodes returns the live servers of the cluster as of the last heartbeat,
// this one included, sorted by id. It costs no backplane round trip.
func (f *Fleet) Nodes() []Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pruneLocked()
	out := make([]Node, 0, len(f.view))
	for _, n := range f.view {
		out = append(out, n.clone())
	}
	slices.SortFunc(out, func(a, b Node) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Node returns the live server id from the view.
func (f *Fleet) Node(id string) (Node, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pruneLocked()
	n, ok := f.view[id]
	return n.clone(), ok
}

// Alone reports whether no other live server is in view: then every
// decision is local, and nothing is redirected, relayed or handed off.
func (f *Fleet) Alone() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pruneLocked()
	return len(f.view) <= 1
}

// pruneLocked drops from the view the servers whose records have expired
// since the last heartbeat: a server that missed three heartbeats is gone
// at once, not at this server's next heartbeat. f.mu must be held.
func (f *Fleet) pruneLocked() {
	if len(f.expires) == 0 {
		return
	}
	now := time.Now()
	if now.Before(f.nextExp) {
		return
	}
	var next time.Time
	for id, at := range f.expires {
		if !now.Before(at) {
			delete(f.view, id)
			delete(f.expires, id)
		} else if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	f.nextExp = next
}

// Detached reports whether the backplane has never been reached although
// the server tried: then it serves alone since start, and the readiness
// probe says so.
func (f *Fleet) Detached() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.beaten && f.okBeats == 0
}

// RejectedRecords returns how many records were dropped from the view
// because they were unsigned or not signed with this fleet's key (each
// distinct record counted once): a non-zero count means someone writes
// records into the backplane without the security key, or a server runs
// with another key.
func (f *Fleet) RejectedRecords() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rejected
}

// Attached reports whether the last heartbeat reached the backplane.
func (f *Fleet) Attached() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attached
}

// InternalAddress returns the internal address of the live server id, for
// the relay. It is false for this server, an unknown or dead server, and
// one without an internal address.
func (f *Fleet) InternalAddress(id string) (string, bool) {
	if id == f.cfg.NodeID {
		return "", false
	}
	n, ok := f.Node(id)
	if !ok || n.InternalAddress == "" || n.State == StateLeaving {
		return "", false
	}
	return n.InternalAddress, true
}
