package lobby

import (
	"context"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/room"
)

// env is what the module uses of its host and fleet. hostEnv is the real
// one; tests move players without sockets through their own.
type env interface {
	// fleet returns the bound fleet, or nil.
	fleet() room.Fleet
	// move writes ho for to, then redirects player id there (room.Host.Move).
	move(ctx context.Context, id string, to fleet.Node, reason string, ho *room.Handoff) error
	// open opens a room and returns its id.
	open(ctx context.Context, info room.Info) (string, error)
	// send sends p to player id if connected here.
	send(id string, p room.Packet)
	// connected reports whether player id is connected here.
	connected(id string) bool
	// drainPacket is the game's ServerDraining packet, or nil.
	drainPacket() room.Packet
	// cooldown is the host's move cooldown.
	cooldown() time.Duration
}

type hostEnv[S, I, P any] struct{ h *room.Host[S, I, P] }

func (e hostEnv[S, I, P]) fleet() room.Fleet { return e.h.Fleet() }

func (e hostEnv[S, I, P]) move(ctx context.Context, id string, to fleet.Node, reason string, ho *room.Handoff) error {
	c, ok := e.h.Client(id)
	if !ok {
		return errGone
	}
	return e.h.Move(ctx, c, to, reason, ho)
}

func (e hostEnv[S, I, P]) open(ctx context.Context, info room.Info) (string, error) {
	r, err := e.h.OpenRoom(ctx, info)
	if err != nil {
		return "", err
	}
	return r.ID(), nil
}

func (e hostEnv[S, I, P]) send(id string, p room.Packet) {
	if c, ok := e.h.Client(id); ok {
		c.Send(p)
	}
}

func (e hostEnv[S, I, P]) connected(id string) bool {
	_, ok := e.h.Client(id)
	return ok
}

func (e hostEnv[S, I, P]) drainPacket() room.Packet {
	if dn, ok := e.h.Game().(room.DrainNotifier); ok {
		return dn.ServerDraining()
	}
	return nil
}

func (e hostEnv[S, I, P]) cooldown() time.Duration { return e.h.Config().MoveCooldown }

// uniqueClaimer is the part of a fleet that claims an id for one server
// only; *fleet.Fleet has it.
type uniqueClaimer interface {
	ClaimUnique(ctx context.Context, kind, id string) error
}
