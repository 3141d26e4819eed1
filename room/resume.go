package room

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/muster-gg/muster/fleet"
)

// A server that leaves this one's view without removing its checkpoint
// index (checkpoint.go) died: it was killed, or lost its backplane for
// longer than its record lives. Its rooms are resumed by the servers that
// remain, each room by one of them: the live server with room ranked
// first for the room's id (rendezvous hashing, fleet.Ranked) takes its
// checkpoint, which the backplane gives to one taker only, checks it as a
// move's snapshot is checked (signed with the fleet's key; a checkpoint,
// of that server, not expired), claims its seated players over the dead
// server (refusing the room when another live server holds one of them:
// it runs there), and resumes the room at its checkpoint's step under the
// same id. Its players, who reconnect anywhere with hello "rejoin", are
// sent to it as to any room on another server (arriveLater waits for the
// claim of a player whose seat's server is gone). A room without seats is
// not resumed. The index is removed by the server ranked first for the
// dead server's id, once its checkpoints have expired.

// watchDead resumes the rooms of the servers that leave the view without
// leaving, until ctx ends. It looks at the view every heartbeat. Run's
// helper.
func (h *Host[Sim, Input, Player]) watchDead(ctx context.Context, cs CheckpointStore) {
	every := h.fleet.Config().Heartbeat
	if every <= 0 {
		every = 2 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	seen := h.viewIDs()
	forget := map[string]time.Time{} // dead server → when to remove its index
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := h.viewIDs()
		for id := range seen {
			if !now[id] {
				if at, ok := h.resumeDead(ctx, cs, id); ok {
					forget[id] = at
				}
			}
		}
		seen = now
		for id, at := range forget {
			if time.Now().After(at) || now[id] {
				delete(forget, id)
				if !now[id] {
					if err := cs.DeleteCheckpointIndexOf(ctx, id); err != nil && ctx.Err() == nil {
						h.logger.Warn("remove a dead server's checkpoint index", "node_id", id, "err", err)
					}
				}
			}
		}
	}
}

// viewIDs returns the ids of the servers in view.
func (h *Host[Sim, Input, Player]) viewIDs() map[string]bool {
	ids := make(map[string]bool)
	for _, n := range h.fleet.Nodes() {
		ids[n.ID] = true
	}
	return ids
}

// resumeDead resumes the rooms of the dead server node that rank this
// server first. It reports, when this server is the one to remove node's
// index, when to do it (ok).
func (h *Host[Sim, Input, Player]) resumeDead(ctx context.Context, cs CheckpointStore, node string) (removeAt time.Time, ok bool) {
	if h.server != nil && h.server.Draining() {
		return time.Time{}, false
	}
	ix, err := cs.CheckpointIndexOf(ctx, node)
	if errors.Is(err, fleet.ErrNotFound) {
		return time.Time{}, false // it left, or wrote no checkpoint
	}
	if err != nil {
		h.logger.Warn("read a dead server's checkpoint index; its rooms are not resumed here", "node_id", node, "err", err)
		return time.Time{}, false
	}
	self := h.fleet.ID()
	nodes := h.fleet.Nodes()
	keep := fleet.Node.HasRoom
	mine := 0
	for _, id := range ix.IDs {
		if ranked := fleet.Ranked(id, nodes, keep); len(ranked) > 0 && ranked[0].ID == self {
			mine++
			if err := h.resumeRoom(ctx, cs, node, id); err != nil {
				h.logger.Warn("room not resumed from its checkpoint", "room_id", id, "node_id", node, "err", err)
			}
		}
	}
	h.logger.Info("dead server's rooms resumed", "node_id", node, "rooms", len(ix.IDs), "resumed_here", mine)
	if ranked := fleet.Ranked(node, nodes, keep); len(ranked) > 0 && ranked[0].ID == self {
		return time.Now().Add(h.checkpointTTL()), true
	}
	return time.Time{}, false
}

// resumeRoom takes room id's checkpoint that server node wrote and
// resumes the room here. A checkpoint taken already (by another server),
// dropped or expired is no error.
func (h *Host[Sim, Input, Player]) resumeRoom(ctx context.Context, cs CheckpointStore, node, id string) error {
	sealed, err := cs.TakeCheckpoint(ctx, node, id)
	if errors.Is(err, fleet.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := h.resumeSealed(ctx, node, sealed); err != nil {
		h.ckStats.refused.Add(1)
		return err
	}
	h.ckStats.resumed.Add(1)
	return nil
}

// resumeSealed checks the sealed checkpoint of a room of the dead server
// node and resumes the room here, its players claimed over node.
func (h *Host[Sim, Input, Player]) resumeSealed(ctx context.Context, node string, sealed []byte) error {
	if len(sealed) > h.cfg.Migrate.MaxBytes {
		return fmt.Errorf("%w: %d bytes, over %d", ErrSnapshot, len(sealed), h.cfg.Migrate.MaxBytes)
	}
	s, err := openCheckpoint(h.moveKey, sealed, node, time.Now())
	if err != nil {
		return err
	}
	if len(s.Seats) == 0 {
		return fmt.Errorf("%w: room %s has no seats", ErrSnapshot, s.ID)
	}
	r, ids, err := h.restoreRoom(s)
	if err != nil {
		return err
	}
	h.dropQueuedReleases(ids)
	held, err := h.fleet.ClaimFree(ctx, fleet.KindPlayer, ids...)
	if err != nil {
		h.logger.Warn("claim a resumed room's players; re-asserted when the backplane returns", "room_id", s.ID, "err", err)
	}
	if len(held) > 0 {
		h.releaseAllBut(ctx, ids, held)
		return fmt.Errorf("%w: room %s: %d of its players are held by another live server (it runs there)", ErrSnapshot, s.ID, len(held))
	}
	if err := h.seatMoved(r, ids); err != nil {
		h.releaseAllBut(ctx, ids, nil)
		return err
	}
	h.roomChanged(r, false, nil)
	h.sched.add(r)
	h.logger.Info("room resumed from its checkpoint", "room_id", s.ID, "node_id", node, "step", s.Step, "players", len(ids))
	return nil
}

// releaseAllBut releases the claims on the players of ids that are not in
// held (those another server holds).
func (h *Host[Sim, Input, Player]) releaseAllBut(ctx context.Context, ids, held []string) {
	skip := make(map[string]bool, len(held))
	for _, id := range held {
		skip[id] = true
	}
	var mine []string
	for _, id := range ids {
		if !skip[id] {
			mine = append(mine, id)
		}
	}
	if len(mine) > 0 {
		if err := h.fleet.Release(ctx, fleet.KindPlayer, mine...); err != nil {
			h.logger.Warn("release the players of a room not resumed", "players", len(mine), "err", err)
		}
	}
}
