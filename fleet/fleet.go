package fleet

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/muster-gg/muster/backplane"
)

// Fleet is one server's membership in a fleet. Create it with New, run its
// heartbeat with Run.
type Fleet struct {
	cfg    Config
	bp     backplane.Backplane
	logger *slog.Logger

	kick      chan struct{} // asks Run for a heartbeat now
	flushKick chan struct{} // asks the flusher to write queued releases
	left      chan struct{} // closed when the server has left the fleet

	// beatMu orders heartbeats and leaving, so that no heartbeat in flight
	// writes the record back after the server has left.
	beatMu sync.Mutex

	mu          sync.Mutex
	ready       bool
	draining    bool
	leaving     bool
	load        int // exact
	shown       int // published: moves in steps of LoadStep
	stats       map[string]int64
	view        map[string]Node      // live servers, self included
	raw         map[string][]byte    // the bytes each record in view was decoded from
	expires     map[string]time.Time // when records in view expire, if soon
	nextExp     time.Time            // the earliest of expires
	attached    bool                 // the last heartbeat reached the backplane
	beaten      bool                 // at least one heartbeat reached it
	countFailed bool                 // an Increment failed since the last heartbeat that reached it
	lastOK      time.Time            // when the last heartbeat that reached it was sent
	okBeats     int                  // heartbeats that reached it
	instance    string               // this process's mark in its record
	signKey     []byte               // derived from cfg.Key; nil: unsigned
	rejected    int64                // records dropped for their signature
	rejectedIDs map[string][]byte    // the last record dropped, by id, of those in the store at the last heartbeat
	running     bool                 // Run was called
	ended       bool                 // Run has returned or is returning
	held        map[backplane.Key]bool
	pending     map[backplane.Key]bool // released by ReleaseLater, not yet written
	// The heartbeat re-asserts every held claim, and with many thousands
	// of them it must not go over them all while it holds f.mu: every
	// Claim, Holds and Release would wait for it. It keeps a list of its
	// own, beat, and brings it up to date from heldLog, the claims whose
	// state changed since it last looked: taking the log under f.mu costs
	// nothing, and the rest is done outside it. heldLog is nil until the
	// first heartbeat, which builds beat from held, and again once no
	// heartbeat will read it (the server left, or Run stopped).
	heldLog  map[backplane.Key]bool // key -> held now; see holdLocked
	beat     heldList               // Run's goroutine only (under beatMu)
	spareLog map[backplane.Key]bool // an emptied log to hand over next; beatMu
	scanned  int                    // claims the heartbeat went over holding f.mu (for tests)
	// relQ holds what ReleaseLater queued and f.mu's holders have not
	// moved to held and pending yet (see absorbLocked). It has a lock of
	// its own, relMu, so that ReleaseLater, which a room's step worker
	// calls, never waits for f.mu and whoever holds it. relMu is taken
	// after f.mu, never before.
	relMu    sync.Mutex
	relQ     map[backplane.Key]bool
	onLost   func(kind, id string)
	drainers []Drainer
	local    localCounters // Increment's fallback
	drain    *drainRun
	leaveErr error

	wg sync.WaitGroup // goroutines started by the Fleet (drains from HTTP)
}

// New returns a Fleet for cfg over bp. It starts nothing and never touches
// the backplane. A nil logger means slog.Default().
func New(cfg Config, bp backplane.Backplane, logger *slog.Logger) (*Fleet, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if bp == nil {
		return nil, fmt.Errorf("%w: the backplane is nil (use backplane/memory for one server)", ErrConfig)
	}
	if logger == nil {
		logger = slog.Default()
	}
	f := &Fleet{
		cfg:       cfg,
		bp:        bp,
		logger:    logger.With("component", "fleet", "node_id", cfg.NodeID),
		kick:      make(chan struct{}, 1),
		flushKick: make(chan struct{}, 1),
		left:      make(chan struct{}),
		stats:     make(map[string]int64),
		held:      make(map[backplane.Key]bool),
		pending:   make(map[backplane.Key]bool),
		relQ:      make(map[backplane.Key]bool),
	}
	f.instance = rand.Text()[:12]
	f.signKey = recordKey(cfg.Key)
	f.view = map[string]Node{cfg.NodeID: f.selfLocked()}
	return f, nil
}

// ID returns this server's node id.
func (f *Fleet) ID() string { return f.cfg.NodeID }

// Config returns the configuration in force, defaults filled in.
func (f *Fleet) Config() Config { return f.cfg }

// Run publishes this server's record every heartbeat and refreshes the view
// until ctx ends or the server has left the fleet. When ctx ends first, the
// server leaves the fleet at once (best effort) so that the others need not
// wait three heartbeats. Run returns when every goroutine the Fleet started
// has ended.
func (f *Fleet) Run(ctx context.Context) error {
	f.mu.Lock()
	if f.running {
		f.mu.Unlock()
		return ErrRunning
	}
	f.running = true
	f.mu.Unlock()
	defer f.wg.Wait()
	defer func() {
		f.mu.Lock()
		f.ended = true // no goroutine is added to f.wg after this
		f.mu.Unlock()
	}()
	stop := make(chan struct{})
	var flusher sync.WaitGroup
	flusher.Go(func() { f.flushLoop(ctx, stop) })
	defer func() {
		close(stop)
		flusher.Wait()
	}()
	t := time.NewTicker(f.cfg.Heartbeat)
	defer t.Stop()
	for {
		if err := f.step(ctx); err != nil {
			f.mu.Lock()
			f.leaving = true // and never leave: the record is the other's
			f.heldLog = nil  // no heartbeat reads it again
			f.mu.Unlock()
			close(f.left)
			f.logger.Error("stopping", "err", err)
			return err
		}
		select {
		case <-ctx.Done():
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.cfg.CallTimeout)
			defer cancel()
			f.leave(lctx)
			return nil
		case <-f.left:
			return nil
		case <-t.C:
		case <-f.kick:
		}
	}
}

// step is one heartbeat: publish the record, read the view, and re-assert
// the claims when the backplane has come back or lost its state. It
// returns ErrDuplicateID when another running server has this node id.
func (f *Fleet) step(ctx context.Context) error {
	f.beatMu.Lock()
	defer f.beatMu.Unlock()
	f.mu.Lock()
	if f.leaving {
		f.mu.Unlock()
		return nil
	}
	self := f.selfLocked()
	checkDup := f.okBeats > 0 && f.okBeats <= MissedHeartbeats
	f.mu.Unlock()

	// For a ttl after start, a record of this id that another process
	// wrote after this one's is another running server with the same id (a
	// record found at the very first heartbeat may be this server's
	// previous life, which writes no more).
	if checkDup {
		cctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
		nodes, err := f.bp.Nodes(cctx)
		cancel()
		for _, bn := range nodes {
			rec, signed := verify(f.signKey, bn.Data)
			if n, ok := decodeNode(bn.ID, rec); signed && ok && err == nil && n.ID == self.ID && n.Instance != "" && n.Instance != f.instance {
				return fmt.Errorf("%w: %q: another running server writes this node id's record; give each server its own muster.server.fleet.node-id (MUSTER__SERVER__FLEET__NODE_ID)", ErrDuplicateID, self.ID)
			}
		}
	}

	ttl := MissedHeartbeats * f.cfg.Heartbeat
	sent := time.Now()
	cctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
	nodes, created, err := f.bp.Heartbeat(cctx, backplane.Node{ID: self.ID, Data: sign(f.signKey, self.encode())}, ttl)
	cancel()
	if err != nil && ctx.Err() != nil {
		return nil // cut short by the stop, not an outage: Run leaves
	}

	f.mu.Lock()
	if err != nil {
		wasAttached := f.attached
		f.attached = false
		// One failed heartbeat says little about the others: a slow call
		// on a busy machine fails as an outage does. Each peer stays in
		// view until its record has expired for sure, a ttl after the
		// last heartbeat that reached the backplane, or sooner when the
		// backplane said so; the server is alone only when its failures
		// span the ttl.
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
		tell := wasAttached || !f.beaten
		f.beaten = true // log "unreachable at start" once too
		// The log is taken even so, that it stays small in an outage.
		log := f.takeHeldLogLocked()
		f.mu.Unlock()
		f.applyHeldLog(log)
		if tell {
			f.logger.Warn("backplane unreachable; the others stay in view until their records expire", "err", err)
		}
		return nil
	}
	returned := !f.attached && f.beaten
	lost := created && f.beaten && !returned
	f.attached, f.beaten, f.lastOK = true, true, sent
	f.countFailed = false
	f.okBeats++
	if !created && f.okBeats == 1 {
		defer f.logger.Warn("a live record with this node id was found at start: this server's previous life, or another server with the same muster.server.fleet.node-id")
	}
	now := time.Now()
	view := make(map[string]Node, len(nodes))
	raw := make(map[string][]byte, len(nodes))
	var expires map[string]time.Time
	var rejectedIDs map[string][]byte
	for _, bn := range nodes {
		// Most records are as they were at the last heartbeat: decoding
		// them again would cost each server K decodes a heartbeat.
		n, ok := f.view[bn.ID]
		if !ok || !bytes.Equal(f.raw[bn.ID], bn.Data) {
			// A record dropped at the last heartbeat and unchanged since
			// is dropped again without hashing it again.
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
					// Once while this id's records keep failing: a server
					// with another key changes its record every heartbeat.
					f.logger.Warn("dropped the records of a server not signed with this server's key; every server of a fleet needs the same muster.security.key (MUSTER__SECURITY__KEY)", "node", bn.ID)
				}
				if rejectedIDs == nil {
					rejectedIDs = make(map[string][]byte)
				}
				rejectedIDs[bn.ID] = bn.Data
				continue
			}
			if n, ok = decodeNode(bn.ID, rec); !ok {
				continue
			}
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
	log := f.takeHeldLogLocked()
	f.mu.Unlock()
	f.applyHeldLog(log)

	n := len(f.beat.keys)
	switch {
	case returned:
		f.logger.Info("backplane reachable again; rejoined the fleet", "claims", n)
	case lost:
		f.logger.Warn("backplane lost this server's record; re-asserting claims", "claims", n)
	}
	// Every heartbeat renews the claims' lease, in one round trip: a claim
	// lost to a failover is written again, and one whose release was lost
	// runs out within a ttl.
	if n > 0 {
		f.reassert(ctx)
	}
	return nil
}

// heartbeatNow asks Run for a heartbeat without waiting for the ticker, so
// that a change of state is published at once.
func (f *Fleet) heartbeatNow() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// selfLocked returns this server's current record. f.mu must be held.
func (f *Fleet) selfLocked() Node {
	return Node{
		ID:              f.cfg.NodeID,
		Cluster:         f.cfg.Cluster,
		Region:          f.cfg.Region,
		InternalAddress: f.cfg.InternalAddress,
		PublicAddress:   f.cfg.PublicAddress,
		State:           f.stateLocked(),
		Load:            f.shown,
		MaxLoad:         f.cfg.MaxLoad,
		Stats:           maps.Clone(f.stats),
		Instance:        f.instance,
	}
}

func (f *Fleet) stateLocked() State {
	switch {
	case f.leaving:
		return StateLeaving
	case f.draining:
		return StateDraining
	case !f.ready:
		return StateStarting
	case f.load >= f.cfg.MaxLoad:
		return StateFull
	}
	return StateReady
}

// State returns this server's state.
func (f *Fleet) State() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stateLocked()
}

// MarkReady moves a starting server to ready (or full, at its max-load).
// It has no effect once the server drains.
func (f *Fleet) MarkReady() {
	f.mu.Lock()
	f.ready = true
	f.mu.Unlock()
	f.heartbeatNow()
}

// SetLoad sets this server's load. The published load follows it in steps
// of LoadStep, so that the record does not change at every heartbeat, but
// exactly at 0 and within a step of max-load, where the others decide
// whether a match still fits; the state is judged by the exact load.
func (f *Fleet) SetLoad(load int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.load = load
	step := f.cfg.LoadStep
	near := f.cfg.MaxLoad - step // above it, the load is published exactly
	if step < 0 || abs(load-f.shown) >= step || load == 0 || load > near || f.shown > near {
		f.shown = load
	}
	f.view[f.cfg.NodeID] = f.selfLocked()
}

func abs(n int) int { return max(n, -n) }

// Load returns this server's load and max-load.
func (f *Fleet) Load() (load, maxLoad int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.load, f.cfg.MaxLoad
}

// SetStat publishes a module's statistic, such as "queue:duel", with the
// next heartbeat.
func (f *Fleet) SetStat(name string, value int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats[name] = value
	f.view[f.cfg.NodeID] = f.selfLocked()
}

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

// Self returns this server's record with its exact load; the others see
// the load in steps of LoadStep.
func (f *Fleet) Self() Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.selfLocked()
	n.Load = f.load
	return n
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

// Done returns a channel closed when the server has left the fleet.
func (f *Fleet) Done() <-chan struct{} { return f.left }

// leave releases the claims this server still holds, so that they point
// nowhere at once (SPEC F4), removes its record, and ends Run. Safe to
// call twice.
func (f *Fleet) leave(ctx context.Context) error {
	f.beatMu.Lock()
	defer f.beatMu.Unlock()
	f.mu.Lock()
	if f.leaving {
		err := f.leaveErr
		f.mu.Unlock()
		return err
	}
	f.leaving = true
	attached := f.attached
	f.view = map[string]Node{f.cfg.NodeID: f.selfLocked()}
	f.expires = nil
	f.absorbLocked()
	// The maps are replaced, not gone over: the claims are listed after
	// letting go of the lock.
	heldNow, pending := f.held, f.pending
	f.held = make(map[backplane.Key]bool)
	f.pending = make(map[backplane.Key]bool)
	f.heldLog = nil
	f.mu.Unlock()
	held := slices.Collect(maps.Keys(heldNow))
	for k := range pending {
		if !heldNow[k] {
			held = append(held, k)
		}
	}

	if len(held) > 0 {
		if err := f.bp.Release(ctx, f.cfg.NodeID, held...); err != nil {
			f.logger.Warn("release claims on leaving; they point here until the others drop this server", "claims", len(held), "err", err)
		}
	}
	err := f.bp.Leave(ctx, f.cfg.NodeID)
	if err != nil {
		f.logger.Warn("leave the fleet; the others will drop this server after three heartbeats", "err", err)
		if !attached {
			// Detached: the others cannot reach this server's record
			// either, and it expires unaided. Not a failure to exit with.
			err = nil
		}
	} else {
		f.logger.Info("left the fleet")
	}
	f.mu.Lock()
	f.leaveErr = err
	f.mu.Unlock()
	close(f.left)
	return err
}
