package relay

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
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
	overOpen                   atomic.Uint64 // clients refused here, over their OpenLimit
	bytesToNode, bytesToClient atomic.Uint64
	verified, rejected         atomic.Uint64
	nonces                     nonces  // of the relay headers accepted
	failLog                    failLog // which failures to relay to a node are logged
	draining                   atomic.Bool

	open OpenLimit // nil: relayed connections count against no cap here
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
//  3. if r is a WebSocket upgrade naming another live node in the
//     NodeParam query parameter, answers 429 when the client's address
//     holds its cap of open connections on this server already (see
//     LimitOpen), and otherwise, when that node answers the handshake
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

// tryRelay relays r to the node it names, if it can, and reports whether it
// did; when it returns false nothing has been written to w. Its phases:
// route finds the node, holdOpen counts the client's connection here,
// connect dials the node and has it accept the upgrade, and relaySession
// accepts the client and relays until both sides end.
func (rl *Relay) tryRelay(w http.ResponseWriter, r *http.Request) bool {
	rt, ok, answered := rl.route(w, r)
	if !ok {
		return answered
	}
	if !rl.holdOpen(w, rt) {
		return true
	}
	// Held until the session ends, or until r is served locally.
	defer rl.releaseOpen(rt)
	up, ok, answered := rl.connect(w, r, rt)
	if !ok {
		return answered
	}
	return rl.relaySession(w, r, up)
}

// route is where a relayed request goes.
type route struct {
	target string         // the node's id
	addr   string         // its internal address
	client netip.AddrPort // the client's address
}

// route returns where r is to be relayed. When r is not to be relayed, ok
// is false and answered reports whether route has answered the client
// itself (a request target that is not a path, a draining server); if it
// has not, nothing has been written to w.
func (rl *Relay) route(w http.ResponseWriter, r *http.Request) (_ route, ok, answered bool) {
	if rl.key == nil || rl.dir == nil || !isUpgrade(r) {
		return route{}, false, false
	}
	target := r.URL.Query().Get(rl.cfg.NodeParam)
	if target == "" || target == rl.cfg.NodeID {
		return route{}, false, false
	}
	if !originForm(r) {
		// Only a path may follow the node's address: anything else in the
		// request line (a scheme, an authority, user info, an opaque
		// part) could name another host, so nothing is dialled.
		http.Error(w, "relay: the request target must be a path", http.StatusBadRequest)
		return route{}, false, true
	}
	addr, live := rl.dir.InternalAddress(target)
	if !live || addr == "" {
		return route{}, false, false
	}
	client, known := clientAddr(r.RemoteAddr)
	if !known {
		return route{}, false, false
	}
	rl.mu.Lock()
	closing := rl.closing
	rl.mu.Unlock()
	if closing {
		return route{}, false, false
	}
	if rl.draining.Load() {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "relay: this server is draining; connect through another", http.StatusServiceUnavailable)
		return route{}, false, true
	}
	return route{target: target, addr: addr, client: client}, true, false
}

// connect dials rt's node and has it accept the client's upgrade. When it
// cannot, ok is false and answered reports whether the client has been
// given the node's refusal; if it has not, the failure is counted and
// logged, nothing has been written to w, and r is to be served locally.
func (rl *Relay) connect(w http.ResponseWriter, r *http.Request, rt route) (_ upstream, ok, answered bool) {
	up, err := rl.dial(r, rt.target, rt.addr, rt.client)
	var refused *refusal
	if errors.As(err, &refused) {
		// The node refused the client, not the relay: the client gets the
		// node's answer, as it would from the node directly.
		rl.refused.Add(1)
		rl.log.Debug("node refused the relayed client", "node_id", rt.target, "status", refused.status, "remote_addr", r.RemoteAddr)
		refused.write(w)
		return upstream{}, false, true
	}
	if err != nil {
		rl.fallbacks.Add(1)
		if log, suppressed := rl.failLog.failed(rt.target, rl.now()); log {
			rl.log.Warn("relay to node failed, serving locally", "node_id", rt.target, "addr", rt.addr, "err", err, "suppressed", suppressed)
		} else {
			rl.log.Debug("relay to node failed, serving locally", "node_id", rt.target, "addr", rt.addr, "err", err)
		}
		return upstream{}, false, false
	}
	return up, true, false
}

// relaySession tracks a session for up, the node's accepted half, accepts
// the client with the node's handshake answer, and relays until both sides
// have ended. It reports false, with nothing written to w, when the relay
// began closing before the session was tracked.
func (rl *Relay) relaySession(w http.ResponseWriter, r *http.Request, up upstream) bool {
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
