package fleet

import "github.com/muster-gg/muster/backplane"

// holdLocked adds k to the claims held, and notes the change in the
// heartbeat's log. f.mu must be held.
func (f *Fleet) holdLocked(k backplane.Key) {
	if f.claimedDuring != nil {
		f.claimedDuring[k] = true
	}
	if f.held[k] {
		return
	}
	f.held[k] = true
	if f.heldLog != nil {
		f.heldLog[k] = true
	}
}

// dropLocked removes k from the claims held, and notes the change in the
// heartbeat's log. f.mu must be held.
func (f *Fleet) dropLocked(k backplane.Key) {
	if !f.held[k] {
		return
	}
	delete(f.held, k)
	if f.heldLog != nil {
		f.heldLog[k] = false
	}
}

// takeHeldLogLocked moves the releases ReleaseLater queued into the
// claims, and returns the log of the claims changed since the last call,
// starting a new one: with the log applied, the heartbeat's list holds
// exactly the claims held now. The first call builds the list from the
// claims instead, and returns nil. f.mu and beatMu must be held.
func (f *Fleet) takeHeldLogLocked() map[backplane.Key]bool {
	f.absorbLocked()
	if f.heldLog == nil {
		f.scanned += len(f.held)
		f.beat = heldList{}
		for k := range f.held {
			f.beat.add(k)
		}
		f.heldLog = make(map[backplane.Key]bool)
		return nil
	}
	log := f.heldLog
	f.heldLog = f.spareLog
	if f.heldLog == nil {
		f.heldLog = make(map[backplane.Key]bool)
	}
	f.spareLog = nil
	f.scanned += len(log)
	return log
}

// applyHeldLog brings the heartbeat's list up to date with log, taken by
// takeHeldLogLocked, and keeps the emptied log for the next one. beatMu
// must be held, not f.mu.
func (f *Fleet) applyHeldLog(log map[backplane.Key]bool) {
	if log == nil {
		return
	}
	for k, held := range log {
		if held {
			f.beat.add(k)
		} else {
			f.beat.remove(k)
		}
	}
	clear(log)
	f.spareLog = log
}

// heldList is a set of keys kept as a list, to pass on as it is, with an
// index into it.
type heldList struct {
	keys []backplane.Key
	at   map[backplane.Key]int
}

func (l *heldList) has(k backplane.Key) bool {
	_, ok := l.at[k]
	return ok
}

func (l *heldList) add(k backplane.Key) {
	if l.has(k) {
		return
	}
	if l.at == nil {
		l.at = make(map[backplane.Key]int)
	}
	l.at[k] = len(l.keys)
	l.keys = append(l.keys, k)
}

// remove takes k out, moving the last key into its place.
func (l *heldList) remove(k backplane.Key) {
	i, ok := l.at[k]
	if !ok {
		return
	}
	last := len(l.keys) - 1
	l.keys[i] = l.keys[last]
	l.at[l.keys[i]] = i
	l.keys[last] = backplane.Key{} // keeps no strings alive
	l.keys = l.keys[:last]
	delete(l.at, k)
}
