package room

import (
	"context"
	"net"
	"net/http"

	"github.com/coder/websocket"
)

// Handler returns the WebSocket endpoint of the host. A client connects
// with ?ticket=<ticket>, sends {"type":"hello","data":{"mode":"new"}} (or
// "rejoin") and gets a welcome; then it sends inputs and module messages.
// Bad input gets a close code: StatusBadHello, StatusBadTicket,
// StatusBadPacket, StatusUnknownType, or 1009 for an oversized frame.
func (h *Host[Sim, Input, Player]) Handler() http.Handler {
	return http.HandlerFunc(h.serve)
}

// serve takes one connection through its phases: admission (the host
// runs, the client's address is within its limits), the upgrade, the
// hello, and then the player's session, which outlives the handler.
func (h *Host[Sim, Input, Player]) serve(w http.ResponseWriter, r *http.Request) {
	if !h.track() {
		http.Error(w, "room host not running", http.StatusServiceUnavailable)
		return
	}
	detached := false
	defer func() {
		if !detached {
			h.conns.Done()
		}
	}()
	ip, ok := h.admitAddress(w, r)
	if !ok {
		return
	}
	defer func() {
		if !detached {
			h.limits.release(ip)
		}
	}()
	hj := &hijacked{ResponseWriter: w}
	c, end, ok := h.accept(hj, r, ip)
	if !ok {
		return // Accept wrote the response
	}
	if !h.enterHello(c) {
		c.Close(StatusGoingAway, "server stopping")
		end()
		return
	}
	defer h.leaveHello(c)

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
	lc := h.sockets.take(c, hj.conn, hj.reader(), h.recv)
	go h.session(ctx, c, ip, end, lc)
}

// track counts a new connection in h.conns, which Run waits for, and
// reports whether the host takes it: not before Run, nor once it stops.
func (h *Host[Sim, Input, Player]) track() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.running || h.stopped {
		return false
	}
	h.conns.Add(1)
	return true
}

// admitAddress applies the client address's limits before the upgrade, and
// answers 429 to a connection over them. A connection admitted holds one
// of its address's open connections until limits.release(ip).
func (h *Host[Sim, Input, Player]) admitAddress(w http.ResponseWriter, r *http.Request) (ip string, ok bool) {
	ip, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		ip = r.RemoteAddr
	}
	// The cap on open connections first: it costs no counter call.
	if !h.limits.hold(ip) {
		http.Error(w, "too many connections", http.StatusTooManyRequests)
		return ip, false
	}
	if !h.limits.allowConnect(r.Context(), ip) {
		http.Error(w, "too many connections", http.StatusTooManyRequests)
		h.limits.release(ip)
		return ip, false
	}
	return ip, true
}

// accept upgrades the connection to a WebSocket and starts the client's
// writer. end closes the client and waits for its writer to finish.
func (h *Host[Sim, Input, Player]) accept(w http.ResponseWriter, r *http.Request, ip string) (c *Client, end func(), ok bool) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return nil, nil, false
	}
	conn.SetReadLimit(h.cfg.ReadLimit)
	msgType := websocket.MessageText
	if h.codec.Binary() {
		msgType = websocket.MessageBinary
	}
	c = &Client{
		ip:      ip,
		conn:    conn,
		msgType: msgType,
		encode:  h.codec.Encode,
		send:    make(chan []byte, h.cfg.SendQueue),
		done:    make(chan struct{}),
	}
	writer := make(chan struct{})
	c.writerDone = writer
	if h.sockets != nil {
		c.handover = make(chan chan bool)
	}
	go func() {
		defer close(writer)
		c.write(h.cfg.PingInterval)
	}()
	end = func() {
		// Closing the client from this side (c.Close) makes the writer
		// close the connection, or the loop, which ends the reads.
		c.Close(StatusGoingAway, "")
		<-writer
		if lc := c.lc.Load(); lc != nil {
			<-lc.ended
		}
	}
	return c, end, true
}

// enterHello counts c among the connections still in hello, which Run
// closes at once when it stops, and reports false when it stops already.
func (h *Host[Sim, Input, Player]) enterHello(c *Client) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.stopped {
		h.hellos[c] = struct{}{}
	}
	return !h.stopped
}

// leaveHello forgets c among the connections in hello (register already
// did, for a client that said hello).
func (h *Host[Sim, Input, Player]) leaveHello(c *Client) {
	h.mu.Lock()
	delete(h.hellos, c)
	h.mu.Unlock()
}
