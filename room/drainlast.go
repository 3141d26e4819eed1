package room

import (
	"context"
	"encoding/json"
	"slices"
)

// sendRestAway redirects (reason drain) every player still connected here
// in no room, once the modules have moved the queues and lobbies and the
// rooms have ended: the players of the last rooms, any who stayed without
// queueing, and any who asked a module for something the module had not
// handed on yet (a newcomer's queue, just read). Each goes to a server
// with room, spread by rendezvous hashing of its id, as a newcomer of a
// draining server with a handoff does, and takes along what the modules
// kept of it (Releaser). A player with nowhere to go stays until the
// server stops. From here on the host takes no new connection and no
// module handles a client's message.
func (h *Host[Sim, Input, Player]) sendRestAway(ctx context.Context) {
	h.mu.Lock()
	// The server leaves next and stops: a newcomer now would be welcomed
	// and cut. It is refused before the upgrade instead (503), as by a
	// stopped host, and a load balancer tries another server.
	h.stopped = true
	h.mu.Unlock()
	// A message a module is handling now ends first; one read later is
	// not handled: its sender is sent away, and what it asked the modules
	// could no longer hand on.
	h.handling.Lock()
	h.lastPart = true
	h.handling.Unlock()
	h.mu.Lock()
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
	// A client being closed was sent away already (its room moved, its
	// queue place went ahead): a second redirect would cross the first.
	rest = slices.DeleteFunc(rest, func(c *Client) bool { return c.Room() != "" || c.closing() })
	if len(rest) == 0 {
		return
	}
	nodes := h.fleet.Nodes()
	for _, c := range rest {
		if ctx.Err() != nil {
			return
		}
		to, ok := h.drainTarget(c.id, nodes)
		if !ok {
			continue
		}
		data, moving := h.release(c.id)
		if moving {
			continue
		}
		h.forward(ctx, c, to, data, ReasonDrain)
	}
}

// release asks the modules to let player id go (Releaser): it returns the
// encoded handoff of the first that kept something of it, or whether one
// is moving it itself.
func (h *Host[Sim, Input, Player]) release(id string) (data []byte, moving bool) {
	for _, m := range h.modules {
		r, ok := m.(Releaser)
		if !ok {
			continue
		}
		ho, mv := r.Release(id)
		switch {
		case mv:
			moving = true
		case ho != nil && data == nil:
			d, err := json.Marshal(ho)
			if err != nil {
				h.logger.Warn("encode a released handoff; the player goes without it", "player_id", id, "err", err)
				continue
			}
			data = d
		case ho != nil:
			h.logger.Warn("two modules kept a player at the drain's end; it takes the first's handoff", "player_id", id, "kind", ho.Kind)
		}
	}
	return data, moving
}
