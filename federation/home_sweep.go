package federation

import (
	"context"
	"time"

	"github.com/muster-gg/muster/backplane"
)

// sweep is housekeeping on the room reports; errors are logged, never
// returned. The rooms of a server that is dead (revoked, unknown, or
// silent for SilentAfter) and still counts rooms end at once; and once per
// SilentAfter every report is read to forget close markers older than
// SilentAfter and anything else left behind.
func (h *Home) sweep(ctx context.Context, s snapshot, now time.Time) {
	dead := map[string]bool{}
	for id, c := range s.counts {
		if !s.liveServer(h, id, now) && (c.Rooms > 0 || c.Players > 0) {
			dead[id] = true
		}
	}
	h.cacheMu.Lock()
	full := h.sweptAt.IsZero() || now.Sub(h.sweptAt) >= h.cfg.SilentAfter || now.Before(h.sweptAt)
	if full {
		h.sweptAt = now
	}
	h.cacheMu.Unlock()
	if !full && len(dead) == 0 {
		return
	}
	err := h.endRooms(ctx, func(r RoomSnapshot) bool {
		if r.Closed {
			return full && now.Sub(r.UpdatedAt) >= h.cfg.SilentAfter
		}
		if dead[r.ServerID] {
			return true
		}
		return full && !s.liveServer(h, r.ServerID, now)
	})
	if err != nil {
		h.log.Warn("federation: sweeping room reports", "err", err)
		return
	}
	for id := range dead {
		if err := h.settleCounts(ctx, id); err != nil {
			h.log.Warn("federation: sweeping room reports", "server_id", id, "err", err)
		}
	}
}

// endRooms forgets every room report for which end is true, taking each
// out of its server's counts in the same compare-and-set.
func (h *Home) endRooms(ctx context.Context, end func(RoomSnapshot) bool) error {
	rooms, err := all[RoomSnapshot](ctx, h, collRooms)
	if err != nil {
		return err
	}
	for id, r := range rooms {
		if !end(r) {
			continue
		}
		err := h.update(ctx, func() ([]backplane.RecordSwap, error) {
			var cur RoomSnapshot
			raw, err := h.read(ctx, collRooms, id, &cur)
			if err != nil || raw == nil || cur.ServerID != r.ServerID || cur.Seq != r.Seq {
				return nil, err // gone, or changed since: judged again next time
			}
			var c countRecord
			rawC, err := h.read(ctx, collCounts, cur.ServerID, &c)
			if err != nil {
				return nil, err
			}
			swaps := []backplane.RecordSwap{unset(collRooms, id, raw)}
			if !cur.Closed && rawC != nil {
				c.Rooms, c.Players = max(0, c.Rooms-1), max(0, c.Players-len(cur.Members))
				swaps = append(swaps, set(collCounts, cur.ServerID, rawC, c))
			}
			return swaps, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// settleCounts deletes a dead server's counts once its rooms are gone.
func (h *Home) settleCounts(ctx context.Context, serverID string) error {
	return h.update(ctx, func() ([]backplane.RecordSwap, error) {
		var c countRecord
		raw, err := h.read(ctx, collCounts, serverID, &c)
		if err != nil || raw == nil {
			return nil, err
		}
		if c.Rooms > 0 {
			// Rooms it reported while being swept; or counts that drifted
			// (a register written before counts were kept): start again.
			h.log.Warn("federation: a dead server's room counts reset", "server_id", serverID, "rooms", c.Rooms)
		}
		return []backplane.RecordSwap{unset(collCounts, serverID, raw)}, nil
	})
}
