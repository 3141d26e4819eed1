// Package modkit is what the lobby and matchmaking modules share: Base, the
// host they are attached to and the loops of their Run and Drain, and the
// moves of their players to other servers (handoffs, the move cooldown,
// many moves at once).
package modkit

import (
	"context"
	"time"
)

// Tell sends the host's drain packet, if the game has one, to the
// players ids connected here.
func (b *Base) Tell(ids ...string) {
	p := b.Env.DrainPacket()
	if p == nil {
		return
	}
	for _, id := range ids {
		b.Env.Send(id, p)
	}
}

// DrainLoop is the body of a module's fleet.Drainer: it runs step every tick
// until step reports that nothing is left here (0), or until ctx ends,
// when it runs tellRest to tell whoever is still here.
func DrainLoop(ctx context.Context, tick time.Duration, step func(context.Context, time.Time) int, tellRest func()) {
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
