package matchmaking

import (
	"context"
	"math"
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
	// open opens a room for a match.
	open(ctx context.Context, info room.Info) error
	// send sends p to player id if connected here.
	send(id string, p room.Packet)
	// connected reports whether player id is connected here.
	connected(id string) bool
	// seated reports whether player id has a seat in a room here.
	seated(id string) bool
	// drainPacket is the game's ServerDraining packet, or nil.
	drainPacket() room.Packet
	// cooldown is the host's move cooldown.
	cooldown() time.Duration
	// freeSeats is the load this server may still take: max-load minus
	// its exact current load, which counts rooms just opened (the load
	// the fleet publishes lags by up to a second and a heartbeat).
	// math.MaxInt without a limit; may be negative.
	freeSeats() int
}

// hostEnv is the env of a module attached to a room host.
type hostEnv[S, I, P any] struct{ h *room.Host[S, I, P] }

func (e hostEnv[S, I, P]) fleet() room.Fleet { return e.h.Fleet() }

func (e hostEnv[S, I, P]) move(ctx context.Context, id string, to fleet.Node, reason string, ho *room.Handoff) error {
	c, ok := e.h.Client(id)
	if !ok {
		return errGone
	}
	return e.h.Move(ctx, c, to, reason, ho)
}

func (e hostEnv[S, I, P]) open(ctx context.Context, info room.Info) error {
	_, err := e.h.OpenRoom(ctx, info)
	return err
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

func (e hostEnv[S, I, P]) seated(id string) bool { return e.h.RoomOf(id) != "" }

func (e hostEnv[S, I, P]) drainPacket() room.Packet {
	if dn, ok := e.h.Game().(room.DrainNotifier); ok {
		return dn.ServerDraining()
	}
	return nil
}

func (e hostEnv[S, I, P]) cooldown() time.Duration { return e.h.Config().MoveCooldown }

func (e hostEnv[S, I, P]) freeSeats() int {
	f := e.h.Fleet()
	if f == nil {
		return math.MaxInt
	}
	limit := f.Config().MaxLoad
	if limit <= 0 {
		return math.MaxInt
	}
	return limit - e.h.Load()
}

// statSetter is the optional part of a fleet that publishes statistics;
// *fleet.Fleet has it.
type statSetter interface {
	SetStat(name string, value int64)
}
