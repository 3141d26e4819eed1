package room

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/muster-gg/muster/fleet"
)

// Checkpoints against a crash, for a game that implements Migrator with
// Config.Checkpoint.Interval set. Every interval each room's snapshot is
// taken at a step boundary, as a drain's move takes it, but the room steps
// on (its worker pays for the game's Snapshot, nothing more); the rooms
// are spread over the interval, a batch at a time. The snapshot, sealed
// with the fleet's key for no server (To "", From this one) and expiring
// after checkpointLives intervals, is written to the backplane as this
// server's checkpoint of the room (fleet.PutCheckpoint), and the list of
// the rooms with one as this server's checkpoint index. A snapshot over
// Migrate.MaxBytes is not written, and counted. A room that ends or moves
// away has its checkpoint dropped; a drain, or a stop, removes the index
// first, so that nobody resumes what this server ends or moves.
//
// When a server leaves this one's view without having removed its index
// (it was killed), resume.go resumes its rooms.

// checkpointLives is how many intervals a checkpoint lives beside the
// time the fleet takes to see its server gone (checkpointTTL).
const checkpointLives = 3

// checkpointTTL is how long a checkpoint lives: it outlives the next one
// written, a server whose writes fall a little behind, and the time the
// others take to see its server gone (its record's life, then a
// heartbeat of theirs).
func (h *Host[Sim, Input, Player]) checkpointTTL() time.Duration {
	return checkpointLives*h.cfg.Checkpoint.Interval + (fleet.MissedHeartbeats+2)*h.fleet.Config().Heartbeat
}

// checkpointSlot is the shortest time between two batches of a round.
const checkpointSlot = 50 * time.Millisecond

// CheckpointStore is the part of a Fleet that keeps the rooms'
// checkpoints in the backplane. *fleet.Fleet implements it; a Fleet
// without it writes none (New's caller is warned at Run).
type CheckpointStore interface {
	PutCheckpoint(ctx context.Context, id string, data []byte, ttl time.Duration) error
	TakeCheckpoint(ctx context.Context, node, id string) ([]byte, error)
	DropCheckpoint(ctx context.Context, id string) error
	PutCheckpointIndex(ctx context.Context, ids []string) error
	CheckpointIndexOf(ctx context.Context, node string) (fleet.CheckpointIndex, error)
	DeleteCheckpointIndexOf(ctx context.Context, node string) error
}

// checkpointAsk is a checkpoint asked of a room's worker.
type checkpointAsk struct {
	once  sync.Once
	ready chan struct{} // closed once snap or err is set
	snap  *snapshot
	err   error
}

func (a *checkpointAsk) done(s *snapshot, err error) {
	a.once.Do(func() {
		a.snap, a.err = s, err
		close(a.ready)
	})
}

// askCheckpoint asks r's worker for its snapshot at the end of its next
// pass. It reports false for a room that ended, is ending or moving.
func (r *Room[Sim, Input, Player]) askCheckpoint() (*checkpointAsk, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended || r.endAsked != "" || r.mv != nil || r.ck != nil {
		return nil, false
	}
	a := &checkpointAsk{ready: make(chan struct{})}
	r.ck = a
	r.dirty.Store(true)
	return a, true
}

// checkpoint runs on r's worker at the end of a pass while a checkpoint
// is asked (a): the game's Snapshot and the seats as they are go into
// a.snap, and the room steps on.
func (r *Room[Sim, Input, Player]) checkpoint(a *checkpointAsk) {
	data, err := r.host.snapshotGame(r)
	r.mu.Lock()
	if r.ck != a || r.ended {
		r.mu.Unlock()
		return
	}
	r.ck = nil
	var s *snapshot
	if err == nil {
		s = r.captureLocked(data)
	}
	r.mu.Unlock()
	a.done(s, err)
}

// checkpointStats counts a host's checkpoints.
type checkpointStats struct {
	written, skipped, failed, bytes, resumed, refused atomic.Uint64
}

// CheckpointStats are a host's counts of checkpoints, for metrics.
type CheckpointStats struct {
	// Written counts the checkpoints written; Bytes their signed size.
	Written, Bytes uint64
	// Skipped counts the snapshots over Migrate.MaxBytes, not written.
	Skipped uint64
	// Failed counts the checkpoints not written for an error: the game's
	// Snapshot, or the backplane.
	Failed uint64
	// Resumed counts the rooms of dead servers resumed here from their
	// checkpoints; Refused those whose checkpoint was refused (signed
	// with another key, of another server, expired, one the game cannot
	// read) or whose players another server holds.
	Resumed, Refused uint64
}

func (c *checkpointStats) stats() CheckpointStats {
	return CheckpointStats{
		Written: c.written.Load(), Bytes: c.bytes.Load(), Skipped: c.skipped.Load(), Failed: c.failed.Load(),
		Resumed: c.resumed.Load(), Refused: c.refused.Load(),
	}
}

// checkpointer is a host's checkpoint state.
type checkpointer struct {
	mu      sync.Mutex
	off     bool     // a drain or a stop ended the checkpoints
	gone    []string // rooms ended or moved away since the last batch
	written map[string]bool
}

// checkpointStore returns the host's CheckpointStore, nil when it writes
// no checkpoint.
func (h *Host[Sim, Input, Player]) checkpointStore() CheckpointStore {
	if h.cfg.Checkpoint.Interval <= 0 || h.migrator == nil || h.fleet == nil {
		return nil
	}
	cs, _ := h.fleet.(CheckpointStore)
	return cs
}

// roomGone notes that room id ended or moved away: its checkpoint is
// dropped at the next batch.
func (h *Host[Sim, Input, Player]) roomGone(id string) {
	if h.cfg.Checkpoint.Interval <= 0 {
		return
	}
	h.ck.mu.Lock()
	if !h.ck.off {
		h.ck.gone = append(h.ck.gone, id)
	}
	h.ck.mu.Unlock()
}

// stopCheckpoints ends the checkpoints and removes this server's index,
// so that no other server resumes the rooms it moves or ends: on a drain
// and at the stop.
func (h *Host[Sim, Input, Player]) stopCheckpoints(ctx context.Context) {
	cs := h.checkpointStore()
	if cs == nil {
		return
	}
	h.ck.mu.Lock()
	was := h.ck.off
	h.ck.off = true
	h.ck.mu.Unlock()
	if was {
		return
	}
	if err := cs.PutCheckpointIndex(context.WithoutCancel(ctx), nil); err != nil {
		h.logger.Warn("remove the checkpoint index; another server may resume rooms that ended here", "err", err)
	}
}

// writeCheckpoints writes the rooms' checkpoints every interval until ctx
// ends or the checkpoints are stopped. Run's helper.
//
// The rounds keep a fixed cadence, one step period shorter than the
// interval, and go over the rooms in the order of their ids, each at its
// own offset: a room's snapshot is taken at the pass after it is asked
// for (up to a step later), so that its checkpoint is never more than an
// interval old while the writes keep up.
func (h *Host[Sim, Input, Player]) writeCheckpoints(ctx context.Context, cs CheckpointStore) {
	every := h.cfg.Checkpoint.Interval
	cadence := every - h.sched.period
	if cadence <= 0 {
		cadence = every
	}
	h.ck.mu.Lock()
	h.ck.written = make(map[string]bool)
	h.ck.mu.Unlock()
	for start := time.Now(); ; start = start.Add(cadence) {
		if time.Since(start) > cadence { // fell behind a round: start afresh
			start = time.Now()
		}
		if !sleepUntil(ctx, start) || !h.checkpointRound(ctx, cs, start, cadence) {
			return
		}
	}
}

// checkpointRound writes one round of checkpoints, spread over the
// interval every from start, then the index. It reports false once the
// checkpoints are stopped or ctx ends.
func (h *Host[Sim, Input, Player]) checkpointRound(ctx context.Context, cs CheckpointStore, start time.Time, every time.Duration) bool {
	rooms := h.runningRooms()
	slices.SortFunc(rooms, func(a, b *Room[Sim, Input, Player]) int { return strings.Compare(a.info.ID, b.info.ID) })
	slots := max(1, min(len(rooms), int(every/checkpointSlot)))
	per := (len(rooms) + slots - 1) / slots
	for i := 0; i < slots; i++ {
		if i > 0 {
			if !sleepUntil(ctx, start.Add(time.Duration(i)*every/time.Duration(slots))) {
				return false
			}
		}
		batch := rooms[min(i*per, len(rooms)):min((i+1)*per, len(rooms))]
		if !h.checkpointBatch(ctx, cs, batch, every) {
			return false
		}
	}
	if !h.dropGone(ctx, cs) {
		return false
	}
	h.ck.mu.Lock()
	ids := make([]string, 0, len(h.ck.written))
	for id := range h.ck.written {
		ids = append(ids, id)
	}
	h.ck.mu.Unlock()
	slices.Sort(ids)
	if err := cs.PutCheckpointIndex(ctx, ids); err != nil && ctx.Err() == nil {
		h.logger.Warn("write the checkpoint index", "rooms", len(ids), "err", err)
	}
	return ctx.Err() == nil
}

// checkpointBatch asks each room of batch for its snapshot at once, then
// seals and writes each. It reports false once the checkpoints are stopped
// or ctx ends.
func (h *Host[Sim, Input, Player]) checkpointBatch(ctx context.Context, cs CheckpointStore, batch []*Room[Sim, Input, Player], every time.Duration) bool {
	if !h.dropGone(ctx, cs) {
		return false
	}
	asks := make([]*checkpointAsk, len(batch))
	for i, r := range batch {
		asks[i], _ = r.askCheckpoint()
	}
	wait := time.NewTimer(every)
	defer wait.Stop()
	for i, r := range batch {
		a := asks[i]
		if a == nil {
			continue
		}
		select {
		case <-a.ready:
		case <-ctx.Done():
			return false
		case <-wait.C: // a worker far behind: what is not ready waits for the next round
			wait.Reset(0)
			h.withdraw(r, a)
			continue
		}
		if !h.writeCheckpoint(ctx, cs, r, a) {
			return false
		}
	}
	return true
}

// withdraw takes back checkpoint a asked of r.
func (h *Host[Sim, Input, Player]) withdraw(r *Room[Sim, Input, Player], a *checkpointAsk) {
	r.mu.Lock()
	if r.ck == a {
		r.ck = nil
	}
	r.mu.Unlock()
	a.done(nil, errRoomEnded)
}

// writeCheckpoint seals the snapshot a brought of r and writes it. A room
// whose checkpoint is not written this round is taken off the index: its
// last one is older than an interval. It reports false once the
// checkpoints are stopped or ctx ends.
func (h *Host[Sim, Input, Player]) writeCheckpoint(ctx context.Context, cs CheckpointStore, r *Room[Sim, Input, Player], a *checkpointAsk) bool {
	written := false
	defer func() {
		if !written {
			h.ck.mu.Lock()
			delete(h.ck.written, r.info.ID)
			h.ck.mu.Unlock()
		}
	}()
	if a.err != nil {
		if !errors.Is(a.err, errRoomEnded) {
			h.logger.Warn("the game's Snapshot failed; no checkpoint of the room", "room_id", r.info.ID, "err", a.err)
			h.ckStats.failed.Add(1)
		}
		return true
	}
	s := a.snap
	s.From = h.fleet.ID()
	s.Expires = time.Now().Add(h.checkpointTTL()).UnixMilli()
	var err error
	if s.Data, s.Modules, err = h.roomMoveData(r); err != nil {
		if !errors.Is(err, errModuleKeeps) {
			h.logger.Warn("no checkpoint of the room", "room_id", r.info.ID, "err", err)
			h.ckStats.failed.Add(1)
		}
		return true
	}
	sealed, err := sealSnapshot(h.moveKey, s)
	if err != nil {
		h.ckStats.failed.Add(1)
		return true
	}
	if len(sealed) > h.cfg.Migrate.MaxBytes {
		h.ckStats.skipped.Add(1)
		return true
	}
	h.ck.mu.Lock()
	off := h.ck.off
	h.ck.mu.Unlock()
	if off {
		return false
	}
	if err := cs.PutCheckpoint(ctx, r.info.ID, sealed, h.checkpointTTL()); err != nil {
		if ctx.Err() == nil {
			h.logger.Warn("write a room's checkpoint", "room_id", r.info.ID, "err", err)
			h.ckStats.failed.Add(1)
		}
		return ctx.Err() == nil
	}
	h.ckStats.written.Add(1)
	h.ckStats.bytes.Add(uint64(len(sealed)))
	h.ck.mu.Lock()
	h.ck.written[r.info.ID] = true
	h.ck.mu.Unlock()
	written = true
	return true
}

// dropGone drops the checkpoints of the rooms that ended or moved away
// since the last batch. It reports false once the checkpoints are
// stopped or ctx ends.
func (h *Host[Sim, Input, Player]) dropGone(ctx context.Context, cs CheckpointStore) bool {
	h.ck.mu.Lock()
	gone, off := h.ck.gone, h.ck.off
	h.ck.gone = nil
	for _, id := range gone {
		delete(h.ck.written, id)
	}
	h.ck.mu.Unlock()
	if off {
		return false
	}
	for _, id := range gone {
		if err := cs.DropCheckpoint(ctx, id); err != nil && ctx.Err() == nil {
			h.logger.Warn("drop the checkpoint of a room that ended; it expires", "room_id", id, "err", err)
		}
	}
	return ctx.Err() == nil
}

// sleepUntil waits until at, or ctx ends (false).
func sleepUntil(ctx context.Context, at time.Time) bool {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
