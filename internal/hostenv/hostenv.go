// Package hostenv is what the lobby and matchmaking modules share of
// their room host: Env, the part of the host and fleet their logic runs
// against; Host, the Env of a module attached to a *room.Host; and the
// drain loop both run against it. Tests give a module their own Env to
// move players without sockets.
//
// It holds no state of its own: an Env is as safe for concurrent use as
// the host behind it.
package hostenv

import (
	"context"
	"errors"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/room"
)

// ErrGone is returned by Move when the player to move is no longer
// connected here.
var ErrGone = errors.New("hostenv: player not connected")

// Env is what a module uses of its host and fleet.
type Env interface {
	// Fleet returns the bound fleet, or nil.
	Fleet() room.Fleet
	// Move writes ho for to, then redirects player id there
	// (room.Host.Move); ErrGone if id is not connected here.
	Move(ctx context.Context, id string, to fleet.Node, reason string, ho *room.Handoff) error
	// Open opens a room.
	Open(ctx context.Context, info room.Info) error
	// Send sends p to player id if connected here.
	Send(id string, p room.Packet)
	// Connected reports whether player id is connected here.
	Connected(id string) bool
	// DrainPacket is the game's ServerDraining packet, or nil.
	DrainPacket() room.Packet
	// Cooldown is the host's move cooldown.
	Cooldown() time.Duration
}

// Host is the Env of a module attached to the room host H.
type Host[S, I, P any] struct{ H *room.Host[S, I, P] }

// Fleet implements Env.
func (e Host[S, I, P]) Fleet() room.Fleet { return e.H.Fleet() }

// Move implements Env.
func (e Host[S, I, P]) Move(ctx context.Context, id string, to fleet.Node, reason string, ho *room.Handoff) error {
	c, ok := e.H.Client(id)
	if !ok {
		return ErrGone
	}
	return e.H.Move(ctx, c, to, reason, ho)
}

// Open implements Env.
func (e Host[S, I, P]) Open(ctx context.Context, info room.Info) error {
	_, err := e.H.OpenRoom(ctx, info)
	return err
}

// Send implements Env.
func (e Host[S, I, P]) Send(id string, p room.Packet) {
	if c, ok := e.H.Client(id); ok {
		c.Send(p)
	}
}

// Connected implements Env.
func (e Host[S, I, P]) Connected(id string) bool {
	_, ok := e.H.Client(id)
	return ok
}

// DrainPacket implements Env.
func (e Host[S, I, P]) DrainPacket() room.Packet {
	if dn, ok := e.H.Game().(room.DrainNotifier); ok {
		return dn.ServerDraining()
	}
	return nil
}

// Cooldown implements Env.
func (e Host[S, I, P]) Cooldown() time.Duration { return e.H.Config().MoveCooldown }

// TellDraining sends the game's ServerDraining packet, if it has one, to
// the players ids connected here.
func TellDraining(e Env, ids ...string) {
	p := e.DrainPacket()
	if p == nil {
		return
	}
	for _, id := range ids {
		e.Send(id, p)
	}
}

// Drain is the body of a module's fleet.Drainer: it runs step every tick
// until step reports that nothing is left here (0), or until ctx ends,
// when it runs tellRest to tell whoever is still here.
func Drain(ctx context.Context, tick time.Duration, step func(context.Context, time.Time) int, tellRest func()) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		if step(ctx, time.Now()) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			tellRest()
			return
		case <-t.C:
		}
	}
}
