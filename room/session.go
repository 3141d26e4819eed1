package room

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// session is a player's session after its hello, run on a goroutine of
// its own that Run waits for (h.conns): the claim on its connection that
// its hello could not write is written (connectLater), the client is
// placed (arrive, and arriveLater while the fleet cannot answer), then its
// messages are read until the connection ends; then the client is
// forgotten, its connection closed, and its address's open connection
// given back.
func (h *Host[Sim, Input, Player]) session(ctx context.Context, c *Client, ip string, end func(), lc *loopConn) {
	defer h.conns.Done()
	defer h.limits.release(ip)
	defer end()
	defer h.disconnected(c)
	stop := make(chan struct{})
	var later sync.WaitGroup
	if c.unclaimed {
		later.Go(func() { h.connectLater(ctx, c, stop) })
	}
	if again, seat := h.arrive(ctx, c); again || seat {
		later.Go(func() { h.arriveLater(ctx, c, stop, seat) })
	}
	if lc != nil {
		lc.work(func(typ string, body []byte) bool { return h.message(ctx, c, typ, body, true) })
	} else {
		h.readLoop(ctx, c)
	}
	close(stop)
	later.Wait() // before disconnected releases what they claimed
}

// readLoop reads c's messages until its connection ends, and closes it
// for a frame too big, too many messages, a bad packet, a second hello,
// an unknown type, or a module's error: inputs go to the player's room,
// "leave" unseats it, the rest go to the modules.
func (h *Host[Sim, Input, Player]) readLoop(ctx context.Context, c *Client) {
	var limit bucket
	for {
		frame, err := c.readFrame(ctx)
		if err != nil {
			switch {
			case websocket.CloseStatus(err) == websocket.StatusMessageTooBig:
				c.Close(websocket.StatusMessageTooBig, "frame too big")
			case brokeProtocol(err):
				c.Close(websocket.StatusProtocolError, "protocol error")
			}
			return
		}
		typ, body, ok := h.unwrap(c, &limit, frame)
		if !ok || !h.message(ctx, c, typ, body, false) {
			return
		}
	}
}

// unwrap takes one of c's messages against its message limit and splits
// its envelope; ok is false when it closed the client (too many messages,
// a bad packet).
func (h *Host[Sim, Input, Player]) unwrap(c *Client, limit *bucket, frame []byte) (typ string, body []byte, ok bool) {
	lim := h.cfg.Limits
	if !limit.take(time.Now(), lim.Messages, lim.Burst) {
		h.limited.Add(1)
		c.Close(StatusLimited, "too many messages")
		return "", nil, false
	}
	typ, body, err := h.codec.Decode(frame)
	if err != nil {
		c.Close(StatusBadPacket, "bad packet")
		return "", nil, false
	}
	return typ, body, true
}

// message handles one message of c's: an input goes to the player's room,
// "leave" unseats it, the rest go to the modules. It returns false when
// it closed the client (a bad input, a second hello, an unknown type, a
// module's error). owned says body is the caller's to give away; a module
// is given a copy of one that is not, as it may keep what it is given.
func (h *Host[Sim, Input, Player]) message(ctx context.Context, c *Client, typ string, body []byte, owned bool) bool {
	switch typ {
	case msgInput:
		return h.input(c, body)
	case msgLeave:
		h.Unseat(c.id)
	case msgHello:
		c.Close(StatusBadPacket, "hello twice")
		return false
	default:
		mh := h.routes[typ]
		if mh == nil {
			c.Close(StatusUnknownType, "unknown packet type "+typ)
			return false
		}
		if !owned {
			body = bytes.Clone(body)
		}
		if err := h.handle(ctx, mh, c, typ, body); err != nil {
			c.Close(StatusBadPacket, err.Error())
			return false
		}
	}
	return true
}

// input queues an input for the player's room; false when it closed the
// client for a bad one. An input that arrives after its room ended is
// dropped.
func (h *Host[Sim, Input, Player]) input(c *Client, body []byte) bool {
	var in Input
	if err := h.codec.Unmarshal(body, &in); err != nil {
		c.Close(StatusBadPacket, "bad input")
		return false
	}
	h.mu.Lock()
	rm := h.seated[c.id]
	h.mu.Unlock()
	if rm != nil {
		rm.push(event[Input]{kind: evInput, id: c.id, input: in})
	}
	return true
}

// handle gives a client's message to the module that handles its type,
// unless the drain's last part began: the client is being sent away, and
// what it asked for it asks again on the next server.
func (h *Host[Sim, Input, Player]) handle(ctx context.Context, mh MessageHandler, c *Client, typ string, body []byte) error {
	h.handling.RLock()
	defer h.handling.RUnlock()
	if h.lastPart {
		return nil
	}
	return mh.HandleMessage(ctx, c, typ, body)
}

// disconnected forgets a client whose connection ended. Its seat stays:
// the player can come back.
func (h *Host[Sim, Input, Player]) disconnected(c *Client) {
	c.mu.Lock()
	code, reason := c.closeCode, c.closeReason
	c.mu.Unlock()
	if code != 0 {
		// Why the server cut a player (too slow, no answer to a ping, a
		// flood, a bad packet): without it an operator sees only the
		// player's side.
		h.logger.Debug("closed a client", "player_id", c.id, "code", int(code), "reason", reason)
	} else {
		h.logger.Debug("client disconnected", "player_id", c.id)
	}
	h.mu.Lock()
	if h.clients[c.id] == c {
		delete(h.clients, c.id)
		h.releaseConnLocked(c.id)
		if rm := h.seated[c.id]; rm != nil {
			rm.mu.Lock()
			if s := rm.seats[c.id]; s != nil && s.client == c {
				s.client = nil
				rm.seatsChanged()
				rm.presenceLocked(evAway, c.id)
			}
			rm.mu.Unlock()
		}
	}
	h.mu.Unlock()
	for _, m := range h.modules {
		if d, ok := m.(DisconnectHandler); ok {
			d.Disconnected(c)
		}
	}
}
