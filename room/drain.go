package room

import (
	"context"
	"time"
)

// hostDrainer is the host's part of a server drain (fleet.LastDrainer):
// Drain waits for the rooms to end, DrainLast sends the rest away.
type hostDrainer[Sim, Input, Player any] struct {
	h *Host[Sim, Input, Player]
}

// Drain implements fleet.Drainer.
func (d hostDrainer[Sim, Input, Player]) Drain(ctx context.Context) error { return d.h.drain(ctx) }

// DrainLast implements fleet.LastDrainer.
func (d hostDrainer[Sim, Input, Player]) DrainLast(ctx context.Context) { d.h.sendRestAway(ctx) }

// drain is the host's part of a server drain: move the rooms that can
// move to other servers (migrate.go), then wait for the rest to end;
// at the timeout tell their players, wait the grace, and close them.
func (h *Host[Sim, Input, Player]) drain(ctx context.Context) error {
	h.stopCheckpoints(ctx) // nobody resumes the rooms that move or end now
	h.moveRooms(ctx)       // a game's that implements Migrator
	if h.waitRooms(ctx) {
		return nil
	}
	if p := h.DrainPacket(); p != nil {
		for _, r := range h.runningRooms() {
			r.Broadcast(p)
		}
	}
	t := time.NewTimer(h.cfg.DrainGrace)
	defer t.Stop()
	<-t.C
	for _, r := range h.runningRooms() {
		r.End(ReasonDrained)
	}
	// The rooms end at their next pass; bound the wait by another grace.
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.DrainGrace)
	defer cancel()
	h.waitRooms(gctx)
	return nil
}

// waitRooms waits until no room runs (true) or ctx ends (false).
func (h *Host[Sim, Input, Player]) waitRooms(ctx context.Context) bool {
	for h.Rooms() > 0 {
		select {
		case <-h.roomEnd:
		case <-ctx.Done():
			return h.Rooms() == 0
		}
	}
	return true
}

// DrainPacket implements ModuleHost: the game's ServerDraining packet
// (nil when it returns nil: the game opted out), or without a
// DrainNotifier the default {type:"server_draining", reason}.
func (h *Host[Sim, Input, Player]) DrainPacket() Packet {
	if dn, ok := any(h.game).(DrainNotifier); ok {
		return dn.ServerDraining()
	}
	return DrainingPacket{Type: "server_draining", Reason: DrainReason}
}

// DrainReason is the reason of the default drain packet.
const DrainReason = "the server is shutting down: no new match starts here; a match that outlasts the drain timeout is ended"

// DrainingPacket is the default packet that tells a player the server
// drains, sent when the game has no DrainNotifier: to the players of the
// rooms still running at the drain timeout, shortly before those rooms are
// ended, and to waiting players with nowhere to go.
type DrainingPacket struct {
	Type   string `json:"type"` // "server_draining"
	Reason string `json:"reason"`
}
