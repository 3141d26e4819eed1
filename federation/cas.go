package federation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/muster-gg/muster/backplane"
)

// Register writes are compare-and-set: an operation reads the records it
// depends on, decides, and writes only if none of them changed meanwhile
// (backplane.RecordSwapper), retrying from the read otherwise. So any
// number of Home values on one Redis serve one register without losing
// each other's updates: an approve racing a revoke on another home cannot
// write the node back unrevoked, two reports of one room keep the newer,
// and a report racing its server's revocation cannot leave a room behind.

// maxSwapTries bounds the retries of one operation under contention.
const maxSwapTries = 64

// errContention reports an operation that kept losing its compare-and-set.
var errContention = fmt.Errorf("%w: register busy, too many concurrent writes", ErrUnavailable)

// read reads record id of coll into v and returns its raw bytes, nil when
// it does not exist (v is then left alone).
func (h *Home) read(ctx context.Context, coll, id string, v any) ([]byte, error) {
	data, err := h.bp.Record(ctx, coll, id)
	if errors.Is(err, backplane.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrUnavailable, coll, err)
	}
	if data == nil {
		data = []byte{}
	}
	if err := json.Unmarshal(data, v); err != nil {
		return nil, fmt.Errorf("%w: decode %s/%s: %w", ErrUnavailable, coll, id, err)
	}
	return data, nil
}

// encode returns v as a record.
func encode(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic("federation: encode record: " + err.Error()) // the register's own types always encode
	}
	return data
}

// set is a swap writing v over old.
func set(coll, id string, old []byte, v any) backplane.RecordSwap {
	return backplane.RecordSwap{Collection: coll, ID: id, Old: old, New: encode(v)}
}

// unset is a swap deleting the record that holds old.
func unset(coll, id string, old []byte) backplane.RecordSwap {
	return backplane.RecordSwap{Collection: coll, ID: id, Old: old}
}

// same is a condition: the record still holds old.
func same(coll, id string, old []byte) backplane.RecordSwap {
	return backplane.RecordSwap{Collection: coll, ID: id, Old: old, Check: true}
}

// commit applies swaps if every record still holds its Old. On a backplane
// without RecordSwapper the check and the writes are serialised within this
// process only (one Home per register).
func (h *Home) commit(ctx context.Context, swaps ...backplane.RecordSwap) (bool, error) {
	if s, ok := h.bp.(backplane.RecordSwapper); ok {
		done, err := s.SwapRecords(ctx, swaps...)
		if err != nil {
			return false, fmt.Errorf("%w: write the register: %w", ErrUnavailable, err)
		}
		return done, nil
	}
	h.swapMu.Lock()
	defer h.swapMu.Unlock()
	for _, s := range swaps {
		cur, err := h.bp.Record(ctx, s.Collection, s.ID)
		if errors.Is(err, backplane.ErrNotFound) {
			cur, err = nil, nil
		} else if err == nil && cur == nil {
			cur = []byte{}
		}
		if err != nil {
			return false, fmt.Errorf("%w: read %s: %w", ErrUnavailable, s.Collection, err)
		}
		if (cur == nil) != (s.Old == nil) || !bytes.Equal(cur, s.Old) {
			return false, nil
		}
	}
	for _, s := range swaps {
		var err error
		switch {
		case s.Check:
		case s.New == nil:
			err = h.bp.DeleteRecord(ctx, s.Collection, s.ID)
		default:
			err = h.bp.PutRecord(ctx, s.Collection, s.ID, s.New)
		}
		if err != nil {
			return false, fmt.Errorf("%w: write %s: %w", ErrUnavailable, s.Collection, err)
		}
	}
	return true, nil
}

// update runs try until it commits: try reads what it needs and returns
// the swaps to commit, or nil swaps when there is nothing to write, or an
// error that ends the operation.
func (h *Home) update(ctx context.Context, try func() ([]backplane.RecordSwap, error)) error {
	for range maxSwapTries {
		swaps, err := try()
		if err != nil || len(swaps) == 0 {
			return err
		}
		done, err := h.commit(ctx, swaps...)
		if err != nil || done {
			return err
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	return errContention
}
