package room

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/fleet"
)

// hello reads and checks the client's hello and ticket and registers the
// client. It returns a close code on failure.
func (h *Host[Sim, Input, Player]) hello(ctx context.Context, c *Client, r *http.Request) (websocket.StatusCode, string) {
	mode, code, why := h.readHello(ctx, c)
	if code != 0 {
		return code, why
	}
	id, code, why := h.checkTicket(ctx, c, r.URL.Query().Get("ticket"))
	if code != 0 {
		return code, why
	}
	c.id, c.arrived, c.rejoin = id, time.Now(), mode == "rejoin"
	old, ok := h.register(c)
	if !ok {
		return StatusGoingAway, "server stopping"
	}
	if old != nil {
		old.Close(StatusReplaced, "replaced by a newer connection")
	}
	// Claimed before the welcome: a hello anywhere after it replaces c.
	c.unclaimed = !h.connect(ctx, c)
	roomID, missed, tell := h.seat(c)
	if tell && roomID == "" {
		// Its room ended here while it was away: it has not heard yet.
		c.Send(missed)
	}
	return 0, ""
}

// readHello reads the client's first frame, within the hello timeout, and
// returns the mode its hello asks for ("new" or "rejoin"), or a close code.
func (h *Host[Sim, Input, Player]) readHello(ctx context.Context, c *Client) (mode string, code websocket.StatusCode, why string) {
	// The hello timeout closes the connection from the writer, with a
	// close frame: a cancelled read would cut it without one (1006).
	timeout := time.AfterFunc(h.cfg.HelloTimeout, func() { c.Close(StatusBadHello, "no hello") })
	defer timeout.Stop()
	_, frame, err := c.conn.Read(ctx)
	if err != nil {
		if websocket.CloseStatus(err) == websocket.StatusMessageTooBig {
			return "", websocket.StatusMessageTooBig, "frame too big"
		}
		return "", StatusBadHello, "no hello"
	}
	timeout.Stop()
	typ, body, err := h.codec.Decode(frame)
	if err != nil || typ != msgHello {
		return "", StatusBadHello, "expected hello"
	}
	var hi hello
	if err := h.codec.Unmarshal(body, &hi); err != nil || (hi.Mode != "new" && hi.Mode != "rejoin") {
		return "", StatusBadHello, "unknown hello: mode must be new or rejoin"
	}
	return hi.Mode, 0, ""
}

// checkTicket redeems the client's ticket and returns the player id it
// names, or a close code; a missing or refused ticket counts as a failure
// of the client's address (Limits.Failures).
func (h *Host[Sim, Input, Player]) checkTicket(ctx context.Context, c *Client, ticket string) (id string, code websocket.StatusCode, why string) {
	if ticket == "" {
		h.limits.failed(ctx, c.ip)
		return "", StatusBadTicket, "no ticket"
	}
	// Redeeming may wait for the backplane: stop waiting when the
	// connection is closed (the host stops).
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.done:
			cancel()
		case <-rctx.Done():
		}
	}()
	id, err := h.redeem(rctx, ticket)
	if err != nil {
		h.limits.failed(ctx, c.ip)
		if errors.Is(err, ErrTicket) {
			return "", StatusBadTicket, err.Error()
		}
		return "", websocket.StatusTryAgainLater, "ticket check unavailable"
	}
	return id, 0, ""
}

// register makes c the connection of its player, in place of old (nil
// for none). It reports false, registering nothing, once the host is
// stopping. Registered before its connection is claimed, c keeps a
// release of the claim by an older connection here that ends meanwhile
// from undoing the claim (see releaseConnLocked).
func (h *Host[Sim, Input, Player]) register(c *Client) (old *Client, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return nil, false
	}
	delete(h.hellos, c)
	old = h.clients[c.id]
	h.clients[c.id] = c
	return old, true
}

// seat welcomes c and puts it back in its seat if it has one here: roomID
// is that seat's room, "" for none. The welcome is queued before the seat
// takes c, so no state of the room reaches c before it, however long its
// connection claim took. missed is the end of a room the player was away
// from, to tell it when tell. A c that a newer connection replaced
// meanwhile is neither welcomed nor seated: it is being closed.
func (h *Host[Sim, Input, Player]) seat(c *Client) (roomID string, missed roomOutPacket, tell bool) {
	id := c.id
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.clients[id] != c {
		return "", roomOutPacket{}, false
	}
	rm := h.seated[id]
	if rm != nil && h.fleet != nil && !h.fleet.Holds(fleet.KindPlayer, id) {
		// Another server took the player's claim over (this one was cut
		// off or frozen): it plays there now. It is not seated again
		// here but removed as if it had left, and placed as a newcomer:
		// sent to the holder.
		h.mu.Unlock()
		h.claimLost(id)
		h.mu.Lock()
		rm = nil
	}
	if rm != nil {
		roomID = rm.info.ID
	}
	h.welcome(c, roomID)
	if rm != nil {
		rm.mu.Lock()
		if s := rm.seats[id]; s != nil {
			s.client = c
			rm.seatsChanged()
			rm.presenceLocked(evBack, id)
		}
		rm.mu.Unlock()
	}
	c.room = roomID
	missed, tell = h.takeMissedLocked(id, time.Now())
	return roomID, missed, tell
}

// welcome tells c it is connected: its player id, this server's id (with
// a fleet bound) and the room it is back in, if any.
func (h *Host[Sim, Input, Player]) welcome(c *Client, roomID string) {
	node := ""
	if h.fleet != nil {
		node = h.fleet.ID()
	}
	c.Send(welcomePacket{Type: "welcome", Node: node, Player: c.id, Room: roomID})
}
