package fleet

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/muster-gg/muster/backplane"
)

// step is one heartbeat: publish the record, read the view, and re-assert
// the claims when the backplane has come back or lost its state. It
// returns ErrDuplicateID when another running server has this node id.
// Its phases run in order, under beatMu.
func (f *Fleet) step(ctx context.Context) error {
	f.beatMu.Lock()
	defer f.beatMu.Unlock()
	self, checkDup, ok := f.beatStart()
	if !ok {
		return nil
	}
	if checkDup {
		if err := f.checkDuplicate(ctx, self.ID); err != nil {
			return err
		}
	}
	ttl := MissedHeartbeats * f.cfg.Heartbeat
	sent := time.Now()
	self, nodes, created, err := f.writeRecord(ctx, ttl)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil // cut short by the stop, not an outage: Run leaves
	case err != nil:
		f.outage(self, ttl, err)
		return nil
	}
	f.mu.Lock()
	r := f.reachedLocked(created, sent)
	f.refreshViewLocked(self, nodes)
	log := f.takeHeldLogLocked()
	f.mu.Unlock()
	f.applyHeldLog(log)
	f.renewClaims(ctx, r)
	if r.atStart {
		f.logger.Warn("a live record with this node id was found at start: this server's previous life, or another server with the same muster.server.fleet.node-id")
	}
	return nil
}

// beatStart returns the record to publish, and whether to look for
// another running server with this node id; ok is false once the server
// is leaving, when no heartbeat writes its record again.
func (f *Fleet) beatStart() (self Node, checkDup, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.leaving {
		return Node{}, false, false
	}
	return f.selfLocked(), f.okBeats > 0 && f.okBeats <= MissedHeartbeats, true
}

// checkDuplicate returns ErrDuplicateID when another process writes the
// record of id. For a ttl after start, a record of this id that another
// process wrote after this one's is another running server with the same
// id (a record found at the very first heartbeat may be this server's
// previous life, which writes no more).
func (f *Fleet) checkDuplicate(ctx context.Context, id string) error {
	cctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
	nodes, err := f.bp.Nodes(cctx)
	cancel()
	for _, bn := range nodes {
		rec, signed := verify(f.signKey, bn.Data)
		if n, ok := decodeNode(bn.ID, rec); signed && ok && err == nil && n.ID == id && n.Instance != "" && n.Instance != f.instance {
			return fmt.Errorf("%w: %q: another running server writes this node id's record; give each server its own muster.server.fleet.node-id (MUSTER__SERVER__FLEET__NODE_ID)", ErrDuplicateID, id)
		}
	}
	return nil
}

// writeRecord publishes the record as it is now, in order with Publish's
// writes (see recordWriter), and returns the record it wrote with what
// publish returns.
func (f *Fleet) writeRecord(ctx context.Context, ttl time.Duration) (self Node, nodes []backplane.Node, created bool, err error) {
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	covers := f.rec.asked.Load()
	f.mu.Lock()
	self = f.selfLocked()
	f.mu.Unlock()
	nodes, created, err = f.publish(ctx, self, ttl)
	f.rec.covered, f.rec.err = covers, err
	return self, nodes, created, err
}

// publish writes this server's record, signed, to live for ttl, and
// returns the live records of the fleet and whether the backplane had no
// live record of this server (it created one).
func (f *Fleet) publish(ctx context.Context, self Node, ttl time.Duration) (nodes []backplane.Node, created bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
	defer cancel()
	return f.bp.Heartbeat(cctx, backplane.Node{ID: self.ID, Data: sign(f.signKey, self.encode())}, ttl)
}

// outage handles a heartbeat that did not reach the backplane: the server
// is detached, and the others stay in view until their records have
// expired for sure (keepPeersLocked).
func (f *Fleet) outage(self Node, ttl time.Duration, err error) {
	f.mu.Lock()
	wasAttached := f.attached
	f.attached = false
	f.keepPeersLocked(self, ttl)
	tell := wasAttached || !f.beaten
	f.beaten = true // log "unreachable at start" once too
	// The log is taken even so, that it stays small in an outage.
	log := f.takeHeldLogLocked()
	f.mu.Unlock()
	f.applyHeldLog(log)
	if tell {
		f.logger.Warn("backplane unreachable; the others stay in view until their records expire", "err", err)
	}
}

// keepPeersLocked sets when each peer in view leaves it, after a failed
// heartbeat. One failed heartbeat says little about the others: a slow
// call on a busy machine fails as an outage does. Each peer stays in view
// until its record has expired for sure, a ttl after the last heartbeat
// that reached the backplane, or sooner when the backplane said so; the
// server is alone only when its failures span the ttl. f.mu must be held.
func (f *Fleet) keepPeersLocked(self Node, ttl time.Duration) {
	gone := f.lastOK.Add(ttl)
	for id := range f.view {
		if id == self.ID {
			continue
		}
		// A peer the backplane reported healthy (its record had more
		// than half a ttl to live) probably heartbeat since: it is
		// given the full ttl. One that was missing heartbeats keeps
		// the expiry the backplane gave it.
		if at, ok := f.expires[id]; !ok || at.Sub(f.lastOK) > ttl/2 {
			if f.expires == nil {
				f.expires = make(map[string]time.Time)
			}
			f.expires[id] = gone
		}
	}
	f.nextExp = time.Time{}
	f.view[self.ID] = self
	f.pruneLocked()
}

// reached is what a heartbeat that reached the backplane found.
type reached struct {
	returned bool // the backplane is reachable again after an outage
	lost     bool // the backplane had lost this server's record
	atStart  bool // the first heartbeat found a live record of this id
}

// reachedLocked notes a heartbeat sent at sent that reached the backplane;
// created is what the backplane answered. f.mu must be held.
func (f *Fleet) reachedLocked(created bool, sent time.Time) reached {
	var r reached
	r.returned = !f.attached && f.beaten
	r.lost = created && f.beaten && !r.returned
	f.attached, f.beaten, f.lastOK = true, true, sent
	f.countFailed = false
	f.okBeats++
	r.atStart = !created && f.okBeats == 1
	return r
}

// refreshViewLocked makes the live records of the store the view, self
// included. f.mu must be held.
func (f *Fleet) refreshViewLocked(self Node, nodes []backplane.Node) {
	now := time.Now()
	view := make(map[string]Node, len(nodes))
	raw := make(map[string][]byte, len(nodes))
	var expires map[string]time.Time
	var rejectedIDs map[string][]byte
	for _, bn := range nodes {
		n, ok, rejected := f.recordLocked(bn)
		if rejected {
			if rejectedIDs == nil {
				rejectedIDs = make(map[string][]byte)
			}
			rejectedIDs[bn.ID] = bn.Data
		}
		if !ok {
			continue
		}
		view[n.ID], raw[n.ID] = n, bn.Data
		if bn.TTL > 0 && n.ID != self.ID {
			// Counted from now, a little after the store answered: a
			// dead server is dropped when its record expires, not up to
			// a heartbeat later, and a live one never before.
			if expires == nil {
				expires = make(map[string]time.Time)
			}
			expires[n.ID] = now.Add(bn.TTL)
		}
	}
	view[self.ID] = self
	f.view, f.raw, f.expires, f.nextExp = view, raw, expires, time.Time{}
	f.rejectedIDs = rejectedIDs // ids gone from the store are forgotten
}

// recordLocked returns the server a record of the store describes, ok
// false when it is dropped; rejected reports a record dropped for its
// signature. f.mu must be held.
func (f *Fleet) recordLocked(bn backplane.Node) (n Node, ok, rejected bool) {
	// Most records are as they were at the last heartbeat: decoding them
	// again would cost each server K decodes a heartbeat.
	if n, ok := f.view[bn.ID]; ok && bytes.Equal(f.raw[bn.ID], bn.Data) {
		return n, true, false
	}
	// A record dropped at the last heartbeat and unchanged since is
	// dropped again without hashing it again.
	last, seen := f.rejectedIDs[bn.ID]
	same := seen && bytes.Equal(last, bn.Data)
	var rec []byte
	signed := false
	if !same {
		rec, signed = verify(f.signKey, bn.Data)
	}
	if !signed {
		if !same {
			f.rejected++ // once per record, not per heartbeat
		}
		if !seen {
			// Once while this id's records keep failing: a server with
			// another key changes its record every heartbeat.
			f.logger.Warn("dropped the records of a server not signed with this server's key; every server of a fleet needs the same muster.security.key (MUSTER__SECURITY__KEY)", "node", bn.ID)
		}
		return Node{}, false, true
	}
	n, ok = decodeNode(bn.ID, rec)
	return n, ok, false
}

// renewClaims logs what a heartbeat that reached the backplane found, and
// renews the claims' lease. Every heartbeat renews it, in one round trip
// per maxKeysPerCall claims: a claim lost to a failover is written again,
// and one whose release was lost runs out within a ttl.
func (f *Fleet) renewClaims(ctx context.Context, r reached) {
	n := len(f.beat.keys)
	switch {
	case r.returned:
		f.logger.Info("backplane reachable again; rejoined the fleet", "claims", n)
	case r.lost:
		f.logger.Warn("backplane lost this server's record; re-asserting claims", "claims", n)
	}
	if n > 0 {
		f.reassert(ctx)
	}
}
