package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/muster-gg/muster/backplane"
)

// A server may write checkpoints of the units it runs (room.Host writes
// its rooms' snapshots) so that, if it dies, the others resume them. A
// checkpoint is a handoff (backplane.Handoffs) stored for no server but
// "checkpoint of <node>", under the unit's id, with a lifetime of a few
// intervals: taken once, by exactly one of the servers racing for it. The
// ids of a server's checkpoints are listed in one record of the
// collection CheckpointCollection (backplane.RecordStore), which the
// others read when the server has left their views without leaving.

// CheckpointCollection is the backplane's record collection that lists,
// per server (record id: its node id), the units it keeps checkpoints of.
const CheckpointCollection = "checkpoints"

// checkpointTarget is the handoff target of server node's checkpoints: no
// server's id, as a node id has no space.
func checkpointTarget(node string) string { return "checkpoint of " + node }

// CheckpointIndex is the record of CheckpointCollection for one server:
// the units it keeps checkpoints of, as of At (Unix milliseconds).
type CheckpointIndex struct {
	At  int64    `json:"at"`
	IDs []string `json:"ids"`
}

// PutCheckpoint writes data as the checkpoint of unit id of this server,
// replacing the last; it expires after ttl.
func (f *Fleet) PutCheckpoint(ctx context.Context, id string, data []byte, ttl time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
	defer cancel()
	if err := f.bp.PutHandoff(ctx, checkpointTarget(f.cfg.NodeID), id, data, ttl); err != nil {
		return fmt.Errorf("put checkpoint %s: %w", id, err)
	}
	return nil
}

// TakeCheckpoint takes for good the checkpoint of unit id that server
// node wrote: of servers racing for it, exactly one gets it, the others
// get ErrNotFound, as after it expired or was dropped.
func (f *Fleet) TakeCheckpoint(ctx context.Context, node, id string) ([]byte, error) {
	data, err := f.takeHandoff(ctx, checkpointTarget(node), id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("checkpoint of %s: %w", node, err)
	}
	return data, err
}

// DropCheckpoint removes this server's checkpoint of unit id, if any (a
// unit that ended, or moved away).
func (f *Fleet) DropCheckpoint(ctx context.Context, id string) error {
	_, err := f.TakeCheckpoint(ctx, f.cfg.NodeID, id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// PutCheckpointIndex writes the list of the units this server keeps
// checkpoints of, replacing the last; nil removes it (a server that
// leaves, or drains, so that nobody resumes what it ended or moved).
func (f *Fleet) PutCheckpointIndex(ctx context.Context, ids []string) error {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
	defer cancel()
	if ids == nil {
		if err := f.bp.DeleteRecord(ctx, CheckpointCollection, f.cfg.NodeID); err != nil {
			return fmt.Errorf("delete checkpoint index: %w", err)
		}
		return nil
	}
	data, err := json.Marshal(CheckpointIndex{At: time.Now().UnixMilli(), IDs: ids})
	if err != nil {
		return fmt.Errorf("encode checkpoint index: %w", err)
	}
	if err := f.bp.PutRecord(ctx, CheckpointCollection, f.cfg.NodeID, data); err != nil {
		return fmt.Errorf("put checkpoint index: %w", err)
	}
	return nil
}

// CheckpointIndexOf returns the list of the units server node keeps
// checkpoints of, or ErrNotFound when it keeps none.
func (f *Fleet) CheckpointIndexOf(ctx context.Context, node string) (CheckpointIndex, error) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
	defer cancel()
	data, err := f.bp.Record(ctx, CheckpointCollection, node)
	if errors.Is(err, backplane.ErrNotFound) {
		return CheckpointIndex{}, ErrNotFound
	}
	if err != nil {
		return CheckpointIndex{}, fmt.Errorf("checkpoint index of %s: %w", node, err)
	}
	var ix CheckpointIndex
	if err := json.Unmarshal(data, &ix); err != nil {
		return CheckpointIndex{}, fmt.Errorf("checkpoint index of %s: %w", node, err)
	}
	return ix, nil
}

// DeleteCheckpointIndexOf removes the list of server node, once its
// checkpoints are resumed or expired.
func (f *Fleet) DeleteCheckpointIndexOf(ctx context.Context, node string) error {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
	defer cancel()
	return f.bp.DeleteRecord(ctx, CheckpointCollection, node)
}
