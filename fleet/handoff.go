package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

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
// returns ErrNotFound when there is none. A take that gave up at its
// deadline loses nothing: if the backplane still runs it later (a stalled
// Redis that resumes), it holds the handoff for three call deadlines, when
// takes find none, and then the handoff can be taken again. A draining
// server takes them too: the player it sends away carries its handoff on
// (room.Host does).
func (f *Fleet) TakeHandoff(ctx context.Context, id string) ([]byte, error) {
	return f.takeHandoff(ctx, f.cfg.NodeID, id)
}

// TakeHandoffFor takes, as TakeHandoff does, the handoff written for
// server target under id: a player a redirect sent to target and that was
// served here instead (target was draining, had left, or could not be
// reached) brings along what was written for it there. target comes from
// the client's URL: one that is not a valid node id is refused.
func (f *Fleet) TakeHandoffFor(ctx context.Context, target, id string) ([]byte, error) {
	if err := ValidateNodeID(target); err != nil {
		return nil, fmt.Errorf("take handoff %s: %w", id, err)
	}
	return f.takeHandoff(ctx, target, id)
}

// takeHandoff takes the handoff for target under id and confirms it.
func (f *Fleet) takeHandoff(ctx context.Context, target, id string) ([]byte, error) {
	tctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
	defer cancel()
	taken, err := f.bp.TakeHandoff(tctx, target, id, f.handoffHold())
	if errors.Is(err, backplane.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("take handoff %s: %w", id, err)
	}
	f.confirmHandoff(ctx, target, id, taken.Token)
	return taken.Data, nil
}

// handoffHold is how long a take holds a handoff before it can be taken
// again if the take is not confirmed: three call deadlines, more than the
// take's answer and its confirm can take, so that a take confirmed in time
// is never taken twice, and short enough that a take whose caller gave up
// (and which a stalled backplane may still run once it resumes) leaves the
// handoff to the next asker within a heartbeat or so.
func (f *Fleet) handoffHold() time.Duration { return 3 * f.cfg.CallTimeout }

// confirmHandoff removes for good the handoff for target this server
// took under id with token, as soon as the take's answer is in: the caller uses the
// data in memory, which cannot fail in a way that should give the handoff
// back. It is bounded by a call deadline of its own, and runs even if ctx
// ended meanwhile, as the data is already taken. A confirm that fails is
// logged: the handoff can then be taken again once the take's hold ends.
func (f *Fleet) confirmHandoff(ctx context.Context, target, id, token string) {
	if token == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.cfg.CallTimeout)
	defer cancel()
	if err := f.bp.ConfirmHandoff(ctx, target, id, token); err != nil {
		f.logger.Warn("confirm a handoff taken; it may be taken again", "player_id", id, "hold", f.handoffHold(), "err", err)
	}
}
