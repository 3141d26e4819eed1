package fleet

import (
	"context"
	"errors"
	"fmt"

	"github.com/muster-gg/muster/backplane"
)

// PutHandoff writes data for the server target under id (usually a player
// id), to be taken once when the player arrives there. It expires after
// HandoffTTL. Write the handoff first and only then tell the client to
// move: if this fails, the player must stay.
func (f *Fleet) PutHandoff(ctx context.Context, target, id string, data []byte) error {
	if target == f.cfg.NodeID {
		return fmt.Errorf("put handoff %s: target is this server", id)
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
	defer cancel()
	if err := f.bp.PutHandoff(ctx, target, id, data, HandoffTTL); err != nil {
		return fmt.Errorf("put handoff %s for %s: %w", id, target, err)
	}
	return nil
}

// TakeHandoff takes the handoff written for this server under id, once. It
// returns ErrNotFound when there is none. A draining server takes them
// too: the player it sends away carries its handoff on (room.Host does).
func (f *Fleet) TakeHandoff(ctx context.Context, id string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
	defer cancel()
	data, err := f.bp.TakeHandoff(ctx, f.cfg.NodeID, id)
	if errors.Is(err, backplane.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("take handoff %s: %w", id, err)
	}
	return data, nil
}
