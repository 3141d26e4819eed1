package relay

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Directory looks up the live servers of the fleet. The fleet implements it;
// the relay only reads it.
type Directory interface {
	// InternalAddress returns the host:port at which the live node nodeID
	// accepts plain (ws://) connections from other servers of the fleet.
	// ok is false when the node is unknown or no longer live. It is called
	// once per relay attempt, concurrently, and must not block.
	InternalAddress(nodeID string) (addr string, ok bool)
}

// DirectoryFunc adapts a function to the Directory interface.
type DirectoryFunc func(nodeID string) (addr string, ok bool)

// InternalAddress calls f(nodeID).
func (f DirectoryFunc) InternalAddress(nodeID string) (string, bool) { return f(nodeID) }

// Stats is a snapshot of a Relay's counters. Counters only grow, except
// Active.
type Stats struct {
	// Active is the number of relayed connections open now.
	Active int64
	// Relayed counts the connections relayed to another node.
	Relayed uint64
	// Fallbacks counts relay attempts served locally because the target
	// node could not be reached or failed the handshake (no answer within
	// DialTimeout, or an answer other than 101 and 4xx).
	Fallbacks uint64
	// Refused counts relay attempts the target node refused with a 4xx
	// answer to the client's request (403 for an Origin it does not
	// accept, 429 for an address over its connection limit, ...): that
	// answer was passed on to the client, which is no failure of the node.
	Refused uint64
	// BytesToNode and BytesToClient count the message payload bytes
	// relayed from clients to target nodes and back.
	BytesToNode, BytesToClient uint64
	// Verified counts incoming requests whose relay signature was valid;
	// Rejected counts those that carried a relay signature (a
	// Muster-Relay-Signature header) that was not: forged, stale, replayed
	// or made for another node. Other relay headers without a signature
	// are stripped and not counted.
	Verified, Rejected uint64
}

// Relay is the ?node= WebSocket relay of one server. Create it with New,
// install Middleware in front of the server's routes, and call Shutdown or
// Close when the server stops: relayed connections are hijacked, so
// http.Server.Shutdown neither waits for them nor closes them.
//
// A Relay is safe for concurrent use.
type Relay struct {
	cfg    Config
	key    []byte // nil when no secret is configured
	dir    Directory
	log    *slog.Logger
	dialer net.Dialer
	now    func() time.Time

	// dialNet opens the network connection to a node's internal address;
	// tests replace it to see every address the relay dials.
	dialNet func(ctx context.Context, network, addr string) (net.Conn, error)

	// probeTimeout bounds a client's answer to the ping the relay sends
	// when the node pings (see session.probeClient).
	probeTimeout time.Duration
	// stallTimeout bounds a write that waits for a peer that reads
	// nothing (see side.armStall).
	stallTimeout time.Duration

	// testHookAccepting, when set, runs after a session is tracked and
	// before its client is accepted.
	testHookAccepting func(*session)

	mu       sync.Mutex
	closing  bool
	sessions map[*session]struct{}
	wg       sync.WaitGroup // one per session, held until its pumps end

	loops loops // relays the sessions' frames, where the platform has it
	// noLoop keeps sessions on their pumps' goroutines, for tests and
	// benchmarks of those.
	noLoop bool

	active                     atomic.Int64
	relayed, fallbacks         atomic.Uint64
	refused                    atomic.Uint64
	bytesToNode, bytesToClient atomic.Uint64
	verified, rejected         atomic.Uint64
	nonces                     nonces  // of the relay headers accepted
	failLog                    failLog // which failures to relay to a node are logged
	draining                   atomic.Bool
}

// New returns a Relay for cfg. dir may be nil, in which case no node is
// known and nothing is relayed, but incoming relayed requests are still
// verified. A nil logger means slog.Default(). New starts nothing.
func New(cfg Config, dir Directory, logger *slog.Logger) (*Relay, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	rl := &Relay{
		cfg:      cfg,
		dir:      dir,
		log:      logger.With("component", "relay"),
		now:      time.Now,
		sessions: make(map[*session]struct{}),

		probeTimeout: defaultProbeTimeout,
		stallTimeout: defaultStallTimeout,
	}
	if cfg.Secret != "" {
		rl.key = deriveKey(cfg.Secret)
	}
	rl.dialer = net.Dialer{Timeout: cfg.DialTimeout}
	rl.dialNet = rl.dialer.DialContext
	return rl, nil
}

// Middleware returns next wrapped by the relay. For every request it
//
//  1. removes every Muster-Relay-* header;
//  2. if those headers carried a valid, fresh signature made for this node
//     and this path, restores r.RemoteAddr and r.Host to the client's and
//     records the client's scheme (see FromRelay and ClientScheme);
//  3. if r is a WebSocket upgrade naming another node in the NodeParam
//     query parameter, and that node is live and answers the handshake
//     within DialTimeout, accepts the client and relays messages both ways
//     until either side closes, and when that node refuses the client's
//     request with a 4xx status (an Origin it does not accept, an address
//     over its connection limit), answers the client with that status, the
//     node's headers and up to 4 KiB of its body;
//
// and otherwise serves r with next. A request that carries relay headers
// made by a server of the fleet is never relayed again, so servers with
// different or stale views cannot bounce a connection between them.
//
// The relay accepts the client only after the target node accepted the
// upgrade, with the subprotocol the node chose and the node's handshake
// response headers; the node's own handler therefore decides on origin,
// tickets and subprotocols, as it would for a direct connection.
func (rl *Relay) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, marked := rl.admit(r)
		if !marked && rl.tryRelay(w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// admit strips relay headers from r and, when they carry a valid signature
// not used before, returns a copy of r describing the client. marked reports whether the
// headers were made by a server of the fleet, valid for this request or
// not: such a request has been relayed once already and is never relayed
// again, so servers with different or stale views (an address that now
// belongs to another server) cannot bounce a connection between them.
// Headers a client made up are stripped and have no other effect.
func (rl *Relay) admit(r *http.Request) (_ *http.Request, marked bool) {
	if !hasRelayHeader(r.Header) {
		return r, false
	}
	r2 := withPeer(r)
	r2.Header = r.Header.Clone()
	signed := hasSignatureHeader(r2.Header)
	s, complete := takeHeaders(r2.Header)
	if rl.key == nil {
		return r2, false
	}
	var (
		id        identity
		authentic bool
		err       = errMalformed
	)
	if complete {
		now := rl.now()
		id, authentic, err = verify(rl.key, &s, rl.cfg.NodeID, r.URL.Path, now, rl.cfg.MaxSkew)
		if err == nil {
			// Valid once: a signature is fresh for up to twice the
			// window, from maxSkew early to maxSkew late.
			err = rl.nonces.use(s.Nonce, now, 2*rl.cfg.MaxSkew)
		}
	}
	if err != nil {
		// Only a signature that does not verify is a rejected one: other
		// relay headers without one (Muster-Relay-Foo) are a client's or a
		// proxy's, stripped like the rest, and no sign of a forgery.
		if signed {
			rl.rejected.Add(1)
		}
		rl.log.Debug("relay headers ignored", "remote_addr", r.RemoteAddr, "signed", signed, "err", err)
		return r2, authentic
	}
	rl.verified.Add(1)
	r2 = r2.WithContext(context.WithValue(r2.Context(), identityKey{}, &id))
	r2.RemoteAddr = id.client.String()
	r2.Host = id.host
	return r2, true
}

// hasSignatureHeader reports whether h has a relay signature header, in
// any letter case: what a server of the fleet, or someone forging one,
// sends.
func hasSignatureHeader(h http.Header) bool {
	for name := range h {
		if strings.EqualFold(name, headerSignature) {
			return true
		}
	}
	return false
}

func hasRelayHeader(h http.Header) bool {
	for name := range h {
		if hasRelayPrefix(name) {
			return true
		}
	}
	return false
}

// tryRelay relays r to the node it names, if it can, and reports whether it
// did; when it returns false nothing has been written to w.
func (rl *Relay) tryRelay(w http.ResponseWriter, r *http.Request) bool {
	if rl.key == nil || rl.dir == nil || !isUpgrade(r) {
		return false
	}
	target := r.URL.Query().Get(rl.cfg.NodeParam)
	if target == "" || target == rl.cfg.NodeID {
		return false
	}
	if !originForm(r) {
		// Only a path may follow the node's address: anything else in the
		// request line (a scheme, an authority, user info, an opaque
		// part) could name another host, so nothing is dialled.
		http.Error(w, "relay: the request target must be a path", http.StatusBadRequest)
		return true
	}
	addr, ok := rl.dir.InternalAddress(target)
	if !ok || addr == "" {
		return false
	}
	client, ok := clientAddr(r.RemoteAddr)
	if !ok {
		return false
	}
	rl.mu.Lock()
	closing := rl.closing
	rl.mu.Unlock()
	if closing {
		return false
	}
	if rl.draining.Load() {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "relay: this server is draining; connect through another", http.StatusServiceUnavailable)
		return true
	}

	up, err := rl.dial(r, target, addr, client)
	var refused *refusal
	if errors.As(err, &refused) {
		// The node refused the client, not the relay: the client gets the
		// node's answer, as it would from the node directly.
		rl.refused.Add(1)
		rl.log.Debug("node refused the relayed client", "node_id", target, "status", refused.status, "remote_addr", r.RemoteAddr)
		refused.write(w)
		return true
	}
	if err != nil {
		rl.fallbacks.Add(1)
		if log, suppressed := rl.failLog.failed(target, rl.now()); log {
			rl.log.Warn("relay to node failed, serving locally", "node_id", target, "addr", addr, "err", err, "suppressed", suppressed)
		} else {
			rl.log.Debug("relay to node failed, serving locally", "node_id", target, "addr", addr, "err", err)
		}
		return false
	}
	s := newSession(rl, up.conn)
	defer s.cancel()
	if !rl.track(s) {
		s.up.closing()
		s.up.close(websocket.StatusGoingAway, "")
		linger(up.conn)
		return false
	}
	defer rl.untrack(s)

	if rl.testHookAccepting != nil {
		rl.testHookAccepting(s)
	}
	c, clientData, err := accept(w, r, up)
	if err != nil {
		// The node sees the client leave.
		s.up.closing()
		s.up.close(websocket.StatusGoingAway, "")
		linger(up.conn)
		return true
	}
	if !s.accepted(c) {
		linger(up.conn)
		return true // Close came first
	}
	rl.relayed.Add(1)
	rl.active.Add(1)
	defer rl.active.Add(-1)
	s.run(up.data, clientData)
	return true
}

// upstream is the dialled half of a relayed connection, its handshake done.
type upstream struct {
	conn        net.Conn
	data        []byte      // what the node sent after its handshake response
	header      http.Header // the node's handshake response headers
	subprotocol string
}

// defaultProbeTimeout is how long a client has to answer the relay's ping
// after the node pinged.
const defaultProbeTimeout = 15 * time.Second

// maxHandshake bounds the node's handshake response.
const maxHandshake = 64 << 10

// maxRefusalBody bounds the body of a node's refusal passed on to the
// client; the rest is left unread.
const maxRefusalBody = 4 << 10

// refusal is a node's 4xx answer to a relayed upgrade: its refusal of the
// client, for the client's request (an Origin, an address over its limit,
// a bad ticket), which is passed on to the client rather than counted as a
// failure of the node.
type refusal struct {
	status int
	header http.Header
	body   []byte
}

func (e *refusal) Error() string {
	return fmt.Sprintf("relay: the node refused the client with %d %s", e.status, http.StatusText(e.status))
}

// write answers the client with the node's refusal.
func (e *refusal) write(w http.ResponseWriter) {
	copyResponseHeaders(w.Header(), e.header)
	w.WriteHeader(e.status)
	_, _ = w.Write(e.body)
}

// dial opens the upstream half of a relayed connection: the client's
// upgrade request, with its end-to-end headers and subprotocols, plus the
// signed identity, sent to the target node's internal address. Only addr
// is dialled, whatever the request says.
func (rl *Relay) dial(r *http.Request, target, addr string, client netip.AddrPort) (_ upstream, err error) {
	s := sign(rl.key, client, ClientScheme(r), r.Host, target, r.URL.Path, rl.now())
	h := forwardHeaders(r.Header)
	s.setHeaders(h)
	// As a proxy does, append the address this server saw: a node whose
	// RealIP trusts this server then takes the client's address even
	// without the signature (a clock past MaxSkew), never one the client
	// wrote.
	if prior := h.Values("X-Forwarded-For"); len(prior) > 0 {
		h.Set("X-Forwarded-For", strings.Join(prior, ", ")+", "+client.Addr().String())
	} else {
		h.Set("X-Forwarded-For", client.Addr().String())
	}
	u, err := upstreamURL(addr, r.URL)
	if err != nil {
		return upstream{}, err
	}
	req, err := http.NewRequest(http.MethodGet, "http"+strings.TrimPrefix(u, "ws"), nil)
	if err != nil {
		return upstream{}, err
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])
	h.Set("Upgrade", "websocket")
	h.Set("Connection", "Upgrade")
	h.Set("Sec-WebSocket-Version", "13")
	h.Set("Sec-WebSocket-Key", key)
	offered := subprotocols(r.Header)
	if len(offered) > 0 {
		h.Set("Sec-WebSocket-Protocol", strings.Join(offered, ", "))
	}
	req.Header = h
	req.Host = r.Host

	ctx, cancel := context.WithTimeout(r.Context(), rl.cfg.DialTimeout)
	defer cancel()
	conn, err := rl.dialNet(ctx, "tcp", addr)
	if err != nil {
		return upstream{}, err
	}
	defer func() {
		if err != nil {
			_ = conn.Close()
		}
	}()
	// The handshake is bounded by ctx: when it ends, the deadline ends
	// any read or write in progress.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	if err := req.Write(conn); err != nil {
		stop()
		return upstream{}, err
	}
	br := bufio.NewReader(io.LimitReader(conn, maxHandshake))
	resp, err := http.ReadResponse(br, req)
	var refused *refusal
	if err == nil && resp.StatusCode >= 400 && resp.StatusCode < 500 {
		// Read while ctx still bounds the read: a node that sends less
		// body than it announced is given up at DialTimeout.
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBody))
		err = rerr
		refused = &refusal{status: resp.StatusCode, header: resp.Header, body: body}
	}
	if !stop() {
		return upstream{}, fmt.Errorf("relay: handshake with the node: %w", context.Cause(ctx))
	}
	if err != nil {
		return upstream{}, err
	}
	if refused != nil {
		return upstream{}, refused
	}
	_ = conn.SetDeadline(time.Time{})
	// Each field is one line: two lines mean the two values joined by a
	// comma (RFC 9110, section 5.3), which is no accept key and no one
	// subprotocol.
	accepts, protos := resp.Header.Values("Sec-WebSocket-Accept"), resp.Header.Values("Sec-WebSocket-Protocol")
	proto := resp.Header.Get("Sec-WebSocket-Protocol")
	switch {
	case resp.StatusCode != http.StatusSwitchingProtocols:
		return upstream{}, fmt.Errorf("relay: the node answered the upgrade with %s", resp.Status)
	case !headerHasToken(resp.Header, "Upgrade", "websocket") || !headerHasToken(resp.Header, "Connection", "upgrade"):
		return upstream{}, errors.New("relay: the node's handshake response is not an upgrade")
	case len(accepts) != 1 || accepts[0] != acceptKey(key):
		return upstream{}, errors.New("relay: the node's Sec-WebSocket-Accept is wrong")
	case len(resp.Header.Values("Sec-WebSocket-Extensions")) > 0:
		return upstream{}, errors.New("relay: the node chose an extension that was not offered")
	case len(protos) > 1:
		return upstream{}, fmt.Errorf("relay: the node chose subprotocols %q, not one", protos)
	case proto != "" && !slices.Contains(offered, proto):
		return upstream{}, fmt.Errorf("relay: the node chose subprotocol %q, which was not offered", proto)
	}
	data, _ := br.Peek(br.Buffered())
	return upstream{conn: conn, data: data, header: resp.Header, subprotocol: proto}, nil
}

// accept completes the client's handshake with what the node answered, and
// returns the client's connection and what it sent after its request.
func accept(w http.ResponseWriter, r *http.Request, up upstream) (net.Conn, []byte, error) {
	h := w.Header()
	copyResponseHeaders(h, up.header)
	h.Set("Upgrade", "websocket")
	h.Set("Connection", "Upgrade")
	h.Set("Sec-WebSocket-Accept", acceptKey(strings.TrimSpace(r.Header.Get("Sec-WebSocket-Key"))))
	if up.subprotocol != "" {
		h.Set("Sec-WebSocket-Protocol", up.subprotocol)
	}
	w.WriteHeader(http.StatusSwitchingProtocols)
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	data, _ := brw.Reader.Peek(brw.Reader.Buffered())
	return c, data, nil
}

// originForm reports whether r's request line names only a path and a
// query (RFC 9112 section 3.2.1), the one form the relay forwards.
func originForm(r *http.Request) bool {
	u := r.URL
	return strings.HasPrefix(r.RequestURI, "/") && u.Scheme == "" && u.Opaque == "" &&
		u.User == nil && u.Host == "" && strings.HasPrefix(u.Path, "/")
}

// upstreamURL returns the URL of the relayed request: the node's internal
// address with the path and query of the client's request, built from
// parts, so that nothing in the request can change the host. It checks
// the result as the WebSocket library will read it.
func upstreamURL(addr string, in *url.URL) (string, error) {
	u := url.URL{Scheme: "ws", Host: addr, Path: in.Path, RawPath: in.RawPath, RawQuery: in.RawQuery}
	s := u.String()
	back, err := url.Parse(s)
	if err != nil || back.Host != addr || back.User != nil || back.Opaque != "" {
		return "", fmt.Errorf("relay: request path would change the node address %q", addr)
	}
	return s, nil
}

// track registers s unless the relay is closing.
func (rl *Relay) track(s *session) bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.closing {
		return false
	}
	rl.sessions[s] = struct{}{}
	rl.wg.Add(1)
	return true
}

func (rl *Relay) untrack(s *session) {
	rl.mu.Lock()
	delete(rl.sessions, s)
	rl.mu.Unlock()
	rl.wg.Done()
}

// Close stops relaying new connections, closes every relayed connection
// with 1001 (going away), and waits until all of them and their goroutines
// have ended. Each node is told first, and its client once the node has
// answered, with the node's answer: what a node sent before it reads the
// close still reaches its client. A peer that does not answer the close
// handshake delays Close by at most the close handshake's time (5 s)
// before its connection is dropped. Requests that arrive afterwards
// are served locally. Close always returns nil; it is safe to call more than
// once and concurrently with Shutdown.
func (rl *Relay) Close() error {
	rl.mu.Lock()
	rl.closing = true
	open := make([]*session, 0, len(rl.sessions))
	for s := range rl.sessions {
		open = append(open, s)
	}
	rl.mu.Unlock()

	var wg sync.WaitGroup
	for _, s := range open {
		wg.Go(func() { s.stop(websocket.StatusGoingAway, "server closing") })
	}
	wg.Wait()
	rl.wg.Wait()
	rl.loops.wait()
	return nil
}

// Drain makes the relay refuse every new connection it would relay with
// 503 Service Unavailable, and returns nil at once. A draining server calls
// it (a Relay is a fleet.Drainer): it will leave, and a connection it
// relayed would be cut when it does, while a load balancer that retries a
// 503 on another server (nginx's proxy_next_upstream http_503) has that
// server relay it, or serve it when it is the target. Connections relayed
// already carry on until Shutdown or Close. Requests that are not for
// another node are served as before.
func (rl *Relay) Drain(context.Context) error {
	rl.draining.Store(true)
	return nil
}

// Shutdown stops relaying new connections and waits for the relayed ones to
// end by themselves. When ctx is done first it closes them as Close does and
// returns ctx's error. It is safe to call more than once.
func (rl *Relay) Shutdown(ctx context.Context) error {
	rl.mu.Lock()
	rl.closing = true
	rl.mu.Unlock()

	done := make(chan struct{})
	go func() { // ends when the last session does, at the latest in Close below
		rl.wg.Wait()
		rl.loops.wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		_ = rl.Close()
		<-done
		return ctx.Err()
	}
}

// Stats returns a snapshot of the relay's counters.
func (rl *Relay) Stats() Stats {
	return Stats{
		Active:        rl.active.Load(),
		Relayed:       rl.relayed.Load(),
		Fallbacks:     rl.fallbacks.Load(),
		Refused:       rl.refused.Load(),
		BytesToNode:   rl.bytesToNode.Load(),
		BytesToClient: rl.bytesToClient.Load(),
		Verified:      rl.verified.Load(),
		Rejected:      rl.rejected.Load(),
	}
}

// isUpgrade reports whether r is a WebSocket upgrade request that Accept
// could take; a malformed one is left to the local handler to refuse.
func isUpgrade(r *http.Request) bool {
	if r.Method != http.MethodGet || r.ProtoMajor != 1 || r.ProtoMinor < 1 {
		return false
	}
	if !headerHasToken(r.Header, "Connection", "upgrade") || !headerHasToken(r.Header, "Upgrade", "websocket") {
		return false
	}
	if r.Header.Get("Sec-WebSocket-Version") != "13" {
		return false
	}
	keys := r.Header.Values("Sec-WebSocket-Key")
	if len(keys) != 1 {
		return false
	}
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(keys[0]))
	return err == nil && len(k) == 16
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

func subprotocols(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// hopHeaders are not forwarded in either direction: they describe one hop,
// or are set by the WebSocket library for its own handshake.
var hopHeaders = map[string]bool{
	"Connection":               true,
	"Keep-Alive":               true,
	"Proxy-Authenticate":       true,
	"Proxy-Authorization":      true,
	"Proxy-Connection":         true,
	"Te":                       true,
	"Trailer":                  true,
	"Transfer-Encoding":        true,
	"Upgrade":                  true,
	"Host":                     true,
	"Content-Length":           true,
	"Date":                     true,
	"Sec-Websocket-Key":        true,
	"Sec-Websocket-Version":    true,
	"Sec-Websocket-Accept":     true,
	"Sec-Websocket-Protocol":   true,
	"Sec-Websocket-Extensions": true,
}

// forwardHeaders returns the client's end-to-end request headers (cookies,
// origin, user agent, authorization and the like) for the upstream request.
func forwardHeaders(in http.Header) http.Header {
	out := make(http.Header, len(in))
	for k, v := range in {
		if hopHeaders[http.CanonicalHeaderKey(k)] || hasRelayPrefix(k) || isListedInConnection(in, k) {
			continue
		}
		out[k] = append([]string(nil), v...)
	}
	return out
}

func isListedInConnection(h http.Header, name string) bool {
	return headerHasToken(h, "Connection", name)
}

// copyResponseHeaders passes the node's handshake response headers (cookies,
// for example) on to the client.
func copyResponseHeaders(dst, src http.Header) {
	for k, v := range src {
		if hopHeaders[http.CanonicalHeaderKey(k)] || isListedInConnection(src, k) {
			continue
		}
		dst[k] = append([]string(nil), v...)
	}
}
