package room

import (
	"context"
	"slices"
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

// sendRestAway redirects (reason drain) every player still connected here
// in no room, once the modules have moved the queues and lobbies and the
// rooms have ended: the players of the last rooms, and any who stayed
// without queueing. Each goes to a server with room, spread by rendezvous
// hashing of its id, as a newcomer of a draining server does. A player
// with nowhere to go stays until the server stops. From here on the host
// takes no new connection.
func (h *Host[Sim, Input, Player]) sendRestAway(ctx context.Context) {
	h.mu.Lock()
	// The server leaves next and stops: a newcomer now would be welcomed
	// and cut. It is refused before the upgrade instead (503), as by a
	// stopped host, and a load balancer tries another server.
	h.stopped = true
	if h.fleet == nil {
		h.mu.Unlock()
		return
	}
	var rest []*Client
	for id, c := range h.clients {
		if h.seated[id] == nil {
			rest = append(rest, c)
		}
	}
	h.mu.Unlock()
	rest = slices.DeleteFunc(rest, func(c *Client) bool { return c.Room() != "" })
	if len(rest) == 0 {
		return
	}
	nodes := h.fleet.Nodes()
	for _, c := range rest {
		if ctx.Err() != nil {
			return
		}
		if to, ok := h.drainTarget(c.id, nodes); ok {
			h.forward(ctx, c, to, nil, ReasonDrain)
		}
	}
}
