package room

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/muster-gg/muster/fleet"
)

// Move sends client c to the server node for reason: it writes the handoff
// (when not nil) for that server first, and only then sends the redirect
// packet (the game's, or RedirectPacket) and closes the connection. It
// refuses a player who was moved here less than the move cooldown ago
// (ErrCooldown), a game that turned redirects off (ErrNoRedirect), and a
// move whose handoff could not be written; the player then stays where it
// is.
func (h *Host[Sim, Input, Player]) Move(ctx context.Context, c *Client, node fleet.Node, reason string, ho *Handoff) error {
	if c.Moved() && time.Since(c.arrived) < h.cfg.MoveCooldown {
		return ErrCooldown
	}
	p := h.redirectPacket(c.id, node, reason)
	if p == nil {
		return ErrNoRedirect
	}
	if ho != nil {
		data, err := json.Marshal(ho)
		if err != nil {
			return fmt.Errorf("move: %w", err)
		}
		if err := h.fleet.PutHandoff(ctx, node.ID, c.id, data); err != nil {
			return fmt.Errorf("move: %w", err)
		}
		h.handoffs.Add(1)
	}
	return h.redirect(ctx, c, p, reason)
}

// RedirectPacket is the packet that moves a player when the game has no
// Redirector: {type:"redirect", node, param, address, reason, ticket,
// query}. The client reconnects to its server's URL (or to Address, when
// set) with Query appended: Query carries ?{param}={node} and a fresh
// ticket. A game opts out of moves with a Redirector that returns nil.
type RedirectPacket struct {
	Type    string `json:"type"` // "redirect"
	Node    string `json:"node"`
	Param   string `json:"param"`
	Address string `json:"address,omitempty"`
	Reason  string `json:"reason"`
	Ticket  string `json:"ticket,omitempty"`
	Query   string `json:"query"`
}

// redirectPacket is the packet that sends player id to node: the game's
// Redirect, or RedirectPacket without a Redirector. nil without a fleet,
// or when the game opted out.
func (h *Host[Sim, Input, Player]) redirectPacket(id string, node fleet.Node, reason string) Packet {
	if h.fleet == nil {
		return nil
	}
	rd := Redirect{
		NodeID: node.ID, NodeParam: h.fleet.Config().NodeParam,
		PublicAddress: node.PublicAddress, Reason: reason, PlayerID: id,
	}
	q := url.Values{rd.NodeParam: {node.ID}}
	if tk, err := h.tickets.Issue(id); err == nil {
		rd.Ticket = tk
		q.Set("ticket", tk)
	}
	rd.Query = q.Encode()
	if g, ok := h.game.(Redirector); ok {
		return g.Redirect(rd)
	}
	return RedirectPacket{
		Type: "redirect", Node: rd.NodeID, Param: rd.NodeParam, Address: rd.PublicAddress,
		Reason: reason, Ticket: rd.Ticket, Query: rd.Query,
	}
}

// redirect sends the redirect packet p and closes the connection. The
// player stops counting here before it is told: the "players" stat this
// server publishes drops first (see uncount), so the fleet never counts
// it here and on the server it goes to at once.
func (h *Host[Sim, Input, Player]) redirect(ctx context.Context, c *Client, p Packet, reason string) error {
	h.uncount(ctx, c)
	return h.tellToGo(c, p, reason)
}

// tellToGo sends the redirect packet p to c, uncounted already, and closes
// the connection.
func (h *Host[Sim, Input, Player]) tellToGo(c *Client, p Packet, reason string) error {
	if err := c.Send(p); err != nil {
		return fmt.Errorf("redirect: %w", err)
	}
	c.Close(StatusRedirected, "redirect")
	n, _ := h.redirects.LoadOrStore(reason, new(atomic.Uint64))
	n.(*atomic.Uint64).Add(1)
	return nil
}
