package room

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/muster-gg/muster/fleet"
)

// arrive places a client after its hello: a seated player is back in its
// room; one whose room runs on another server is sent there; one with a
// handoff is given to the module that wrote it. Finding where it plays and
// taking its handoff is one round trip.
//
// When the fleet cannot answer (the backplane is slow or away), the client
// is placed as a newcomer, and arrive reports whether to ask again once
// the fleet answers (again; see arriveLater): a rejoining player may have
// a seat on another server or a handoff here. With checkpoints on, a
// rejoining player whose seat is held by no live server, or by the server
// it could not reach, is placed as a newcomer too, and arrive reports
// whether to wait for a server to resume its room (seat).
func (h *Host[Sim, Input, Player]) arrive(ctx context.Context, c *Client) (again, seat bool) {
	if c.Room() != "" {
		return false, false
	}
	var (
		holder fleet.Node
		data   []byte
	)
	if h.fleet != nil {
		var err error
		holder, data, err = h.fleet.Arrive(ctx, fleet.KindPlayer, c.id)
		if err != nil {
			h.logger.Warn("locate player and take its handoff", "player_id", c.id, "err", err)
			again = c.rejoin
		} else if data == nil {
			data = h.handoffForAsked(ctx, c)
		}
	}
	h.place(ctx, c, holder, data)
	seat = !again && c.rejoin && h.cfg.Checkpoint.Interval > 0 && c.Room() == "" &&
		(holder.ID == "" || holder.ID == c.asked && holder.ID != h.fleet.ID())
	return again, seat
}

// handoffForAsked takes the handoff written for the server client c asked
// for (?node=) when that is not this one: a redirect sent the player
// there with a handoff (its lobby, its queue place), and it was served
// here instead, because that server was draining (it refuses new
// connections, and a load balancer tried another), had left, or could not
// be reached. Without it the player arrived without what it was moved
// with. nil when there is none.
func (h *Host[Sim, Input, Player]) handoffForAsked(ctx context.Context, c *Client) []byte {
	if c.asked == "" || c.asked == h.fleet.ID() {
		return nil
	}
	data, err := h.fleet.TakeHandoffFor(ctx, c.asked, c.id)
	if err != nil && !errors.Is(err, fleet.ErrNotFound) {
		h.logger.Warn("take the handoff written for the server the player asked for", "player_id", c.id, "asked", c.asked, "err", err)
	}
	return data
}

// arriveLater asks the fleet again, every heartbeat, where a rejoining
// client that arrive could not place plays and what it brought, and once
// the fleet answers places it by that: sends it to the server of its
// seat, or gives its queue place or lobby to the module that wrote the
// handoff. Without it such a player lost its seat elsewhere and its
// handoff to a backplane that was slow for a moment. It gives up when stop
// or the client is closed, after a handoff's lifetime, or when the player
// has been seated here meanwhile.
//
// With seat, the fleet answered already: it waits instead for the
// player's seat to be held by a live server other than the one it could
// not reach (its room resumed from a checkpoint after its server died,
// resume.go), and sends it there. It only locates the player: a handoff
// written for it here meanwhile is left to its next arrival.
func (h *Host[Sim, Input, Player]) arriveLater(ctx context.Context, c *Client, stop <-chan struct{}, seat bool) {
	every := h.fleet.Config().Heartbeat
	if every <= 0 { // a Fleet of the caller's own, without one
		every = 2 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	expired := time.NewTimer(fleet.HandoffTTL)
	defer expired.Stop()
	for {
		select {
		case <-stop:
			return
		case <-c.done:
			return
		case <-expired.C:
			return
		case <-t.C:
		}
		if c.Room() != "" {
			return // it plays here now
		}
		if seat {
			if h.seatResumed(ctx, c) {
				return
			}
			continue
		}
		holder, data, err := h.fleet.Arrive(ctx, fleet.KindPlayer, c.id)
		if err != nil {
			continue
		}
		if c.Room() != "" {
			return // seated here while the fleet was asked; a handoff taken now is stale
		}
		if data != nil || holder.ID != "" && holder.ID != h.fleet.ID() {
			h.place(ctx, c, holder, data)
		}
		return
	}
}

// seatResumed sends c to the live server that holds its seat, if one
// other than this one and the one c could not reach does, and reports
// whether it did.
func (h *Host[Sim, Input, Player]) seatResumed(ctx context.Context, c *Client) bool {
	holder, err := h.fleet.Locate(ctx, fleet.KindPlayer, c.id)
	if err != nil || holder.ID == h.fleet.ID() || holder.ID == c.asked {
		return false
	}
	if c.Room() != "" {
		return true // seated here meanwhile
	}
	h.forward(ctx, c, holder, nil, ReasonRejoin)
	return true
}

// place places client c, not seated here, by where the fleet says it
// plays (holder, the zero Node for nowhere) and the handoff it brought
// (data, nil for none).
func (h *Host[Sim, Input, Player]) place(ctx context.Context, c *Client, holder fleet.Node, data []byte) {
	// A client that asked for the server holding its seat and still
	// landed here was not relayed there: the server is dying or
	// unreachable. Sending it back would loop; it is served here.
	if h.fleet != nil && holder.ID != "" && holder.ID != h.fleet.ID() && holder.ID != c.asked {
		if h.forward(ctx, c, holder, data, ReasonRejoin) {
			return
		}
	}
	if data != nil && h.server != nil && h.server.Draining() {
		// What it brought (a queue place, a lobby) is for a server that
		// stays. A newcomer that brought nothing is served: what it asks
		// for next (queue, lobby.create) the modules hand on from here,
		// and the drain's last part sends it away if it is still idle.
		h.sendAway(ctx, c, data)
		return
	}
	var ho Handoff
	if data != nil && json.Unmarshal(data, &ho) != nil {
		h.logger.Warn("undecodable handoff dropped", "player_id", c.id)
		ho = Handoff{}
	}
	for _, m := range h.modules {
		if a, ok := m.(ArrivalHandler); ok {
			a.Arrived(ctx, c, ho)
		}
	}
}

// sendAway redirects a newcomer of a draining server that brought a
// handoff (data: a queue place with its waited time, a lobby) to a server
// with room (spread by rendezvous hashing of its id), passing the handoff
// on, or tells it the server is draining when there is none.
func (h *Host[Sim, Input, Player]) sendAway(ctx context.Context, c *Client, data []byte) {
	if h.fleet != nil {
		if to, ok := h.drainTarget(c.id, h.fleet.Nodes()); ok && h.forward(ctx, c, to, data, ReasonDrain) {
			return
		}
	}
	if p := h.DrainPacket(); p != nil {
		c.Send(p)
	}
}

// drainTarget returns the server a draining server sends player id to: one
// of nodes with room, not this one, spread by rendezvous hashing of the id.
// h.fleet must be set.
func (h *Host[Sim, Input, Player]) drainTarget(id string, nodes []fleet.Node) (fleet.Node, bool) {
	self := h.fleet.ID()
	ranked := fleet.Ranked(id, nodes, func(n fleet.Node) bool { return n.ID != self && n.HasRoom() })
	if len(ranked) == 0 {
		return fleet.Node{}, false
	}
	return ranked[0], true
}

// forward redirects c to server to, with the handoff it came with (data, if
// any) written there first, and reports whether the client was told. A
// handoff that cannot be written moves nobody (SPEC table E): the player
// stays here and is told to retry ({type:"retry", reason}), which also
// counts as told.
func (h *Host[Sim, Input, Player]) forward(ctx context.Context, c *Client, to fleet.Node, data []byte, reason string) bool {
	p := h.redirectPacket(c.id, to, reason)
	if p == nil {
		return false
	}
	if data != nil {
		if err := h.fleet.PutHandoff(ctx, to.ID, c.id, data); err != nil {
			h.logger.Warn("pass a handoff on; the player stays and is told to retry", "player_id", c.id, "to", to.ID, "err", err)
			c.Send(retryPacket{Type: "retry", Reason: "handoff-failed"})
			return true
		}
		h.handoffs.Add(1)
	}
	return h.redirect(ctx, c, p, reason) == nil
}
