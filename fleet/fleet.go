package fleet

import (
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
	rec    recordWriter // orders the record's writes; after beatMu, before mu

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
	// claimedDuring holds the keys claimed while a re-assertion is in
	// flight, or whose claim was being written when it began (nil when
	// none is): the store's answer that another server has one of them
	// may be older than this server's claim, which stands. writing counts
	// the claims of each key being written.
	claimedDuring map[backplane.Key]bool
	writing       map[backplane.Key]int
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

// heartbeatNow asks Run for a heartbeat without waiting for the ticker, so
// that a change of state is published at once.
func (f *Fleet) heartbeatNow() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// Done returns a channel closed when the server has left the fleet.
func (f *Fleet) Done() <-chan struct{} { return f.left }

// leave releases the claims this server still holds, so that they point
// nowhere at once (SPEC F4), removes its record, and ends Run. Safe to
// call twice.
func (f *Fleet) leave(ctx context.Context) error {
	f.beatMu.Lock()
	defer f.beatMu.Unlock()
	f.rec.mu.Lock() // no Publish writes the record back after this
	defer f.rec.mu.Unlock()
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
