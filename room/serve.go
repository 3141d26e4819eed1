package room

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/fleet"
)

// Handler returns the WebSocket endpoint of the host. A client connects
// with ?ticket=<ticket>, sends {"type":"hello","data":{"mode":"new"}} (or
// "rejoin") and gets a welcome; then it sends inputs and module messages.
// Bad input gets a close code: StatusBadHello, StatusBadTicket,
// StatusBadPacket, StatusUnknownType, or 1009 for an oversized frame.
func (h *Host[Sim, Input, Player]) Handler() http.Handler {
	return http.HandlerFunc(h.serve)
}

// ErrCooldown is returned by Move for a player who arrived less than the
// move cooldown ago.
var ErrCooldown = errors.New("room: player arrived too recently to move")

// ErrNoRedirect is returned by Move when the game has no redirect packet.
var ErrNoRedirect = errors.New("room: the game does not redirect")

func (h *Host[Sim, Input, Player]) serve(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	if !h.running || h.stopped {
		h.mu.Unlock()
		http.Error(w, "room host not running", http.StatusServiceUnavailable)
		return
	}
	h.conns.Add(1)
	h.mu.Unlock()
	detached := false
	defer func() {
		if !detached {
			h.conns.Done()
		}
	}()

	ip, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		ip = r.RemoteAddr
	}
	// The cap on open connections first: it costs no counter call.
	if !h.limits.hold(ip) {
		http.Error(w, "too many connections", http.StatusTooManyRequests)
		return
	}
	defer func() {
		if !detached {
			h.limits.release(ip)
		}
	}()
	if !h.limits.allowConnect(r.Context(), ip) {
		http.Error(w, "too many connections", http.StatusTooManyRequests)
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept wrote the response
	}
	conn.SetReadLimit(h.cfg.ReadLimit)
	msgType := websocket.MessageText
	if h.codec.Binary() {
		msgType = websocket.MessageBinary
	}
	c := &Client{
		ip:      ip,
		conn:    conn,
		msgType: msgType,
		encode:  h.codec.Encode,
		send:    make(chan []byte, h.cfg.SendQueue),
		done:    make(chan struct{}),
	}
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		c.write(h.cfg.PingInterval)
	}()
	end := func() {
		// Closing the client from this side (c.Close) makes the writer
		// close the connection, which ends the reads.
		c.Close(StatusGoingAway, "")
		<-writer
	}
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		c.Close(StatusGoingAway, "server stopping")
		end()
		return
	}
	h.hellos[c] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.hellos, c)
		h.mu.Unlock()
	}()

	// The request's context is not cancelled while this handler runs, and
	// a hijacked connection has nothing else to cancel it; the session
	// below outlives the handler, so it keeps the values only.
	ctx := context.WithoutCancel(r.Context())
	if h.fleet != nil {
		c.asked = r.URL.Query().Get(h.fleet.Config().NodeParam)
	}
	if code, why := h.hello(ctx, c, r); code != 0 {
		c.Close(code, why)
		end()
		return
	}
	// The player's session runs on without the handler, so that net/http
	// lets go of the request, its headers and its contexts: several
	// kilobytes a player, for as long as the player stays connected.
	detached = true
	go func() {
		defer h.conns.Done()
		defer h.limits.release(ip)
		defer end()
		defer h.disconnected(c)
		if !h.arrive(ctx, c) {
			h.readLoop(ctx, c)
			return
		}
		stop := make(chan struct{})
		var later sync.WaitGroup
		later.Go(func() { h.arriveLater(ctx, c, stop) })
		h.readLoop(ctx, c)
		close(stop)
		later.Wait()
	}()
}

// hello reads and checks the client's hello and ticket and registers the
// client. It returns a close code on failure.
func (h *Host[Sim, Input, Player]) hello(ctx context.Context, c *Client, r *http.Request) (websocket.StatusCode, string) {
	// The hello timeout closes the connection from the writer, with a
	// close frame: a cancelled read would cut it without one (1006).
	timeout := time.AfterFunc(h.cfg.HelloTimeout, func() { c.Close(StatusBadHello, "no hello") })
	defer timeout.Stop()
	_, frame, err := c.conn.Read(ctx)
	if err != nil {
		if websocket.CloseStatus(err) == websocket.StatusMessageTooBig {
			return websocket.StatusMessageTooBig, "frame too big"
		}
		return StatusBadHello, "no hello"
	}
	timeout.Stop()
	typ, body, err := h.codec.Decode(frame)
	if err != nil || typ != msgHello {
		return StatusBadHello, "expected hello"
	}
	var hi hello
	if err := h.codec.Unmarshal(body, &hi); err != nil || (hi.Mode != "new" && hi.Mode != "rejoin") {
		return StatusBadHello, "unknown hello: mode must be new or rejoin"
	}
	ticket := r.URL.Query().Get("ticket")
	if ticket == "" {
		h.limits.failed(ctx, c.ip)
		return StatusBadTicket, "no ticket"
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
			return StatusBadTicket, err.Error()
		}
		return websocket.StatusTryAgainLater, "ticket check unavailable"
	}
	c.id, c.arrived, c.rejoin = id, time.Now(), hi.Mode == "rejoin"

	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return StatusGoingAway, "server stopping"
	}
	delete(h.hellos, c)
	old := h.clients[id]
	h.clients[id] = c
	var roomID string
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
		rm.mu.Lock()
		if s := rm.seats[id]; s != nil {
			s.client = c
			rm.seatsChanged()
		}
		rm.mu.Unlock()
	}
	c.room = roomID
	missed, tell := h.takeMissedLocked(id, time.Now())
	h.mu.Unlock()
	if old != nil {
		old.Close(StatusReplaced, "replaced by a newer connection")
	}
	node := ""
	if h.fleet != nil {
		node = h.fleet.ID()
	}
	c.Send(welcomePacket{Type: "welcome", Node: node, Player: id, Room: roomID})
	if tell && roomID == "" {
		// Its room ended here while it was away: it has not heard yet.
		c.Send(missed)
	}
	return 0, ""
}

// arrive places a client after its hello: a seated player is back in its
// room; one whose room runs on another server is sent there; one with a
// handoff is given to the module that wrote it. Finding where it plays and
// taking its handoff is one round trip.
//
// When the fleet cannot answer (the backplane is slow or away), the client
// is placed as a newcomer, and arrive reports whether to ask again once
// the fleet answers (see arriveLater): a rejoining player may have a seat
// on another server or a handoff here.
func (h *Host[Sim, Input, Player]) arrive(ctx context.Context, c *Client) (again bool) {
	if c.Room() != "" {
		return false
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
		}
	}
	h.place(ctx, c, holder, data)
	return again
}

// arriveLater asks the fleet again, every heartbeat, where a rejoining
// client that arrive could not place plays and what it brought, and once
// the fleet answers places it by that: sends it to the server of its
// seat, or gives its queue place or lobby to the module that wrote the
// handoff. Without it such a player lost its seat elsewhere and its
// handoff to a backplane that was slow for a moment. It gives up when stop
// or the client is closed, after a handoff's lifetime, or when the player
// has been seated here meanwhile.
func (h *Host[Sim, Input, Player]) arriveLater(ctx context.Context, c *Client, stop <-chan struct{}) {
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
	return h.redirect(c, p, reason) == nil
}

func (h *Host[Sim, Input, Player]) readLoop(ctx context.Context, c *Client) {
	var limit bucket
	lim := h.cfg.Limits
	for {
		_, frame, err := c.conn.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) == websocket.StatusMessageTooBig {
				c.Close(websocket.StatusMessageTooBig, "frame too big")
			}
			return
		}
		if !limit.take(time.Now(), lim.Messages, lim.Burst) {
			h.limited.Add(1)
			c.Close(StatusLimited, "too many messages")
			return
		}
		typ, body, err := h.codec.Decode(frame)
		if err != nil {
			c.Close(StatusBadPacket, "bad packet")
			return
		}
		switch typ {
		case msgInput:
			var in Input
			if err := h.codec.Unmarshal(body, &in); err != nil {
				c.Close(StatusBadPacket, "bad input")
				return
			}
			h.mu.Lock()
			rm := h.seated[c.id]
			h.mu.Unlock()
			if rm != nil {
				rm.push(event[Input]{kind: evInput, id: c.id, input: in})
			} // an input that arrives after its room ended is dropped
		case msgLeave:
			h.Unseat(c.id)
		case msgHello:
			c.Close(StatusBadPacket, "hello twice")
			return
		default:
			mh := h.routes[typ]
			if mh == nil {
				c.Close(StatusUnknownType, "unknown packet type "+typ)
				return
			}
			if err := h.handle(ctx, mh, c, typ, body); err != nil {
				c.Close(StatusBadPacket, err.Error())
				return
			}
		}
	}
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
		if rm := h.seated[c.id]; rm != nil {
			rm.mu.Lock()
			if s := rm.seats[c.id]; s != nil && s.client == c {
				s.client = nil
				rm.seatsChanged()
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
	return h.redirect(c, p, reason)
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

// redirect sends the redirect packet p and closes the connection.
func (h *Host[Sim, Input, Player]) redirect(c *Client, p Packet, reason string) error {
	if err := c.Send(p); err != nil {
		return fmt.Errorf("redirect: %w", err)
	}
	c.Close(StatusRedirected, "redirect")
	n, _ := h.redirects.LoadOrStore(reason, new(atomic.Uint64))
	n.(*atomic.Uint64).Add(1)
	return nil
}

// truncate cuts s to at most n bytes, at the start of a rune, so that
// what is left of valid UTF-8 is valid UTF-8.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// maxCloseReason is the most bytes of reason a close frame carries: 125 of
// payload, less the code's two.
const maxCloseReason = 123

// closeReason makes reason fit a close frame: valid UTF-8, which RFC 6455
// requires of it (a browser, or the relay, fails a connection whose close
// reason is not, and the player loses the code), and at most
// maxCloseReason bytes. It cuts first, so that a long reason (a packet
// type up to the read limit) is not mended whole.
func closeReason(reason string) string {
	return truncate(strings.ToValidUTF8(truncate(reason, maxCloseReason), "\uFFFD"), maxCloseReason)
}
