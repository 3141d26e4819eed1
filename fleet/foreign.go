package fleet

import (
	"fmt"
	"slices"
	"strings"
)

// A server of the cluster that signs its record with another security key
// (or does not sign it) is dropped from the view: it can neither be
// placed in nor steer players here, and the fleet is split in two that
// never match players together. Neither side can tell which key is the
// intended one, so each shows what it sees: the ids of the servers it
// drops (Foreign, published in its own record and at PathCapacity), and a
// server that finds itself outnumbered by them answers its readiness
// probe 503 "foreign-key", so that a deploy with a wrong key stops at its
// first server. A tie (one server against one, or half against half, as
// in the middle of a rolling change of the key) leaves both sides ready:
// taking them all out would stop the whole game.

// maxForeign bounds the ids a record publishes: the store could hold any
// number of records that are not signed with the key.
const maxForeign = 32

// Foreign returns the ids of the servers whose records are in the
// cluster's store but not signed with this server's key
// (Config.Key, muster.security.key), sorted: they run with another key,
// or without one. It is what the last heartbeat that reached the
// backplane found; nil while the fleet is whole.
func (f *Fleet) Foreign() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.foreignLocked(-1)
}

// foreignLocked returns up to limit (all when negative) of the foreign
// ids, sorted. f.mu must be held.
func (f *Fleet) foreignLocked(limit int) []string {
	if len(f.rejectedIDs) == 0 {
		return nil
	}
	ids := make([]string, 0, len(f.rejectedIDs))
	for id := range f.rejectedIDs {
		if id != f.cfg.NodeID {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if limit >= 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	if len(ids) == 0 {
		return nil
	}
	return ids
}

// outnumbered returns, when the servers signed with another key outnumber
// those signed with this server's (itself included), the reason its
// readiness probe gives; "" otherwise, and while the backplane is away:
// then the others leave the view as their records expire, and what the
// last heartbeat found of the foreign ones is old.
func (f *Fleet) outnumbered() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.attached {
		return ""
	}
	foreign := f.foreignLocked(-1)
	own := len(f.view)
	if len(foreign) <= own {
		return ""
	}
	shown := foreign
	if len(shown) > 5 {
		shown = shown[:5]
	}
	more := ""
	if len(shown) < len(foreign) {
		more = ", …"
	}
	return fmt.Sprintf("foreign-key: %d of the %d servers of cluster %s (%s%s) sign with another muster.security.key (MUSTER__SECURITY__KEY) than this one",
		len(foreign), len(foreign)+own, f.cfg.Cluster, strings.Join(shown, ", "), more)
}
