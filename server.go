package muster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/lobby"
	"github.com/muster-gg/muster/matchmaking"
	"github.com/muster-gg/muster/metrics"
	"github.com/muster-gg/muster/relay"
	"github.com/muster-gg/muster/room"
)

// shutdownTimeout bounds the relay's and the HTTP server's shutdown once
// the fleet has left: connections still open then are cut.
const shutdownTimeout = 5 * time.Second

// The HTTP server's bounds on what a client may keep waiting. Each holds a
// goroutine, buffers and a file descriptor while it waits.
const (
	// readHeaderTimeout bounds a request's headers.
	readHeaderTimeout = 10 * time.Second
	// idleTimeout bounds a keep-alive connection's wait for its next
	// request.
	idleTimeout = 2 * time.Minute
	// bodyTimeout is http.Server's ReadTimeout: it bounds the time from a
	// request's first byte to the end of its body (tickets, sign-ins, the
	// game's routes, a POST to no route). It does not reach a WebSocket,
	// a player's or a relayed one, which lives for hours: net/http clears
	// a connection's deadlines when a handler hijacks it (the Hijacker
	// documentation still says they may stay; TestHTTPTimeouts checks
	// that they do not).
	bodyTimeout = 30 * time.Second
)

// host is the part of a *room.Host the Server uses, whatever the game's
// types.
type host interface {
	room.ModuleHost
	metrics.Rooms
	Run(ctx context.Context) error
	Handler() http.Handler
	MoveHandler() http.Handler
	Tickets() *room.Tickets
	Use(m room.Module) error
	Started() <-chan struct{}
}

// Server is one game server: the room host, its fleet membership, the
// relay, the probes, metrics and dashboard, and the game's own routes,
// behind one Handler, or behind two (Handler and OperatorHandler) when
// muster.server.http.operator-port is set. Create it with New; Run serves
// it. A Server runs once.
type Server struct {
	cfg     config.Config
	logger  *slog.Logger
	nodeID  string
	bp      backplane.Backplane
	ownBP   bool
	fleet   *fleet.Fleet
	host    host
	relay   *relay.Relay
	handler http.Handler
	// operator serves the operator's paths alone; Run serves it on
	// muster.server.http.operator-port when that is set.
	operator http.Handler
	l        net.Listener
	fed      *federated // nil unless muster.federation.home-url is set
	ran      atomic.Bool

	idleTimeout, bodyTimeout time.Duration
}

// New builds the server for game with cfg and opts. It starts nothing and
// does not wait for Redis; Run serves. The node id is fixed here, once.
// It checks cfg with CheckConfig first: an error of a setting names its
// config.yml key and environment variable. With muster.federation.home-url
// set, the server is a server of a federation node: it admits players with
// home's tokens (each once in the fleet), seats each in the room its token
// names, and reports its rooms to home, with no code of the game's; with
// muster.federation.role game it has no queues or lobbies of its own.
func New[Sim, Input, Player any](game room.Game[Sim, Input, Player], cfg config.Config, opts ...Option) (*Server, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := CheckConfig(cfg); err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	logger := o.logger
	if logger == nil {
		logger = slog.Default()
	}
	s := &Server{cfg: cfg, nodeID: nodeID(cfg), l: o.listener, idleTimeout: idleTimeout, bodyTimeout: bodyTimeout}
	if o.idleTimeout > 0 {
		s.idleTimeout = o.idleTimeout
	}
	if o.bodyTimeout > 0 {
		s.bodyTimeout = o.bodyTimeout
	}
	s.logger = logger.With("node_id", s.nodeID)

	s.bp = o.backplane
	if s.bp == nil {
		bp, err := openBackplane(cfg)
		if err != nil {
			return nil, err
		}
		s.bp, s.ownBP = bp, true
	}
	reg := o.registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	// The fleet names the node in its lines itself.
	fl, err := fleet.New(fleetConfig(cfg, s.nodeID, machineIP()), metrics.Instrument(s.bp, reg), logger)
	if err != nil {
		s.closeBackplane()
		return nil, err
	}
	s.fleet = fl
	if s.fed, err = newFederated(cfg.Federation, s.logger); err != nil {
		s.closeBackplane()
		return nil, err
	}
	if s.fed != nil {
		s.fed.tokens.UseCounter(fl) // each home token redeemed once in the fleet
		o.checkers = append(o.checkers, s.fed.tokens)
		o.modules = append(o.modules, s.fed.tokens) // seats a token's holder in home's room
		o.watchers = append(o.watchers, s.fed.rooms)
	}

	h, err := room.New(game, roomConfig(cfg), s.logger)
	if err != nil {
		s.closeBackplane()
		return nil, err
	}
	if o.codec != nil {
		h.SetCodec(o.codec)
	}
	h.UseServer(fl)
	h.UseFleet(fl)
	for _, tc := range o.checkers {
		h.AddTicketChecker(tc)
	}
	for _, w := range o.watchers {
		h.AddRoomWatcher(w)
	}
	s.host = h
	modules := o.modules
	mmCfg, playlists := matchmakingConfig(cfg)
	mmCfg.Ratings = o.ratings
	for _, pl := range o.playlists {
		if i := slices.IndexFunc(playlists, func(c matchmaking.Playlist) bool { return c.Name == pl.Name }); i >= 0 {
			s.closeBackplane()
			return nil, fmt.Errorf("%w: playlist %q is both item %d of muster.matchmaking.playlists (MUSTER__MATCHMAKING__PLAYLISTS__%d__NAME) and given to WithPlaylists; declare it in one place", config.ErrInvalid, pl.Name, i, i)
		}
	}
	playlists = append(playlists, o.playlists...)
	if err := checkGameRole(cfg, o.playlists, o.lobbies, s.logger); err != nil {
		s.closeBackplane()
		return nil, err
	}
	if o.ratings != nil && len(playlists) == 0 {
		s.closeBackplane()
		return nil, fmt.Errorf("%w: WithRatings is given, but there is no playlist to rate for: declare one in muster.matchmaking.playlists (MUSTER__MATCHMAKING__PLAYLISTS__0__NAME) or with WithPlaylists", config.ErrInvalid)
	}
	if len(playlists) > 0 {
		mm, err := matchmaking.New(mmCfg, playlists...)
		if err != nil {
			s.closeBackplane()
			return nil, err
		}
		modules = append(modules, mm)
	}
	if o.lobbies && !gameRole(cfg) {
		lb, err := lobby.New(lobbyConfig(cfg))
		if err != nil {
			s.closeBackplane()
			return nil, err
		}
		modules = append(modules, lb)
	}
	for _, m := range modules {
		if err := h.Use(m); err != nil {
			s.closeBackplane()
			return nil, err
		}
	}
	rl, err := relay.New(relayConfig(cfg, s.nodeID), fl, s.logger)
	if err != nil {
		s.closeBackplane()
		return nil, err
	}
	s.relay = rl
	// A socket relayed through the server counts against limits.open here.
	rl.LimitOpen(h)
	fl.AddDrainer(rl) // a draining server relays no new connection
	reg.MustRegister(metrics.NewCollector(metrics.Sources{Fleet: fl, Rooms: h, Relay: rl}))

	// The operator's paths: the probes and drain, metrics and dashboard.
	operatorRoutes := func(r chi.Router) {
		r.Handle("/muster/server/*", fl.Handler())
		r.Handle("/metrics", metrics.Handler(reg))
		r.Handle("/muster/dashboard", dashboard.Handler(fl))
		r.Handle("/muster/dashboard/*", dashboard.Handler(fl))
	}
	op := chi.NewRouter()
	// The drain's loopback right is decided behind the same RealIP as on
	// the game's port: a request a trusted proxy forwarded is not local.
	op.Use(realIP(cfg))
	operatorRoutes(op)
	s.operator = op

	r := chi.NewRouter()
	r.Use(realIP(cfg)) // the client behind the load balancer
	r.Use(rl.Middleware)
	if cfg.Server.HTTP.OperatorPort == 0 {
		operatorRoutes(r)
	}
	r.Handle("/play", h.Handler())
	// The rooms a draining server of the fleet moves here, signed with
	// the fleet's key: posted to the internal address, the game's port.
	r.Handle(room.PathMove, h.MoveHandler())
	if o.guestTickets != "" {
		r.Post(o.guestTickets, guestTickets(h.Tickets()))
	}
	for _, si := range o.signIns {
		r.Post(si.path, signInHandler(h.Tickets(), si.signIn))
	}
	for _, routes := range o.routes {
		routes(r)
	}
	s.handler = r
	return s, nil
}

// Serve is New and Run in one call: it serves game with cfg until ctx
// ends or a SIGTERM or SIGINT has drained the server, and returns when
// everything has stopped.
func Serve[Sim, Input, Player any](ctx context.Context, game room.Game[Sim, Input, Player], cfg config.Config, opts ...Option) error {
	s, err := New(game, cfg, opts...)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

// Handler returns the server's whole HTTP surface: client identity behind
// trusted proxies, the relay to other servers, the probes and drain
// endpoint (/muster/server/…), /metrics, the dashboard
// (/muster/dashboard), the game's WebSocket (/play) and the game's own
// routes. With muster.server.http.operator-port set, it is what Run serves
// on the game's port: all of that but the probes and drain, /metrics and
// the dashboard, which it answers with 404; OperatorHandler has them.
func (s *Server) Handler() http.Handler { return s.handler }

// OperatorHandler returns the operator's HTTP surface alone: client
// identity behind trusted proxies, the probes and drain endpoint
// (/muster/server/…), /metrics and the dashboard (/muster/dashboard), and
// 404 for any other path. With muster.server.http.operator-port set, Run
// serves it on that port; with operator-port 0, Handler serves the same
// paths, and OperatorHandler is for serving them elsewhere as well.
func (s *Server) OperatorHandler() http.Handler { return s.operator }

// NodeID returns the server's node id.
func (s *Server) NodeID() string { return s.nodeID }

// Fleet returns the server's fleet membership.
func (s *Server) Fleet() *fleet.Fleet { return s.fleet }

// Tickets returns the server's ticket minter: a game's sign-in route
// issues a ticket for the player it signed in.
func (s *Server) Tickets() *room.Tickets { return s.host.Tickets() }

// Host returns the room host, for the game's own routes and modules.
func (s *Server) Host() room.ModuleHost { return s.host }

// Run listens on muster.server.http (or the listener given with
// WithListener, for the game's port only) and, when
// muster.server.http.operator-port is set, on that port of
// muster.server.http.host for OperatorHandler. It runs the fleet, the room
// host and its modules, marks the server ready, and serves until ctx ends
// or a SIGTERM or SIGINT drains it (a second signal cuts the drain short).
// With muster.federation set, it also runs the federation node agent and
// the room reporter (see docs/federation.md). Then it leaves the fleet,
// stops the rooms, shuts the relay and the HTTP servers down, and returns
// when all of it has ended, both ports closed.
//
// A client's connection, on either port, is closed when it sends no
// request headers within 10 s, no next request within 2 minutes, or not a
// request's whole body within 30 s of its start; a route of the game's
// that takes larger uploads sets its own read deadline with
// http.ResponseController.
// WebSockets, relayed or not, are not bounded.
func (s *Server) Run(ctx context.Context) error {
	if !s.ran.CompareAndSwap(false, true) {
		return errors.New("muster: Server.Run called twice")
	}
	defer s.closeBackplane()
	l := s.l
	if l == nil {
		var err error
		if l, err = listen(ctx, s.cfg); err != nil {
			return err
		}
	}
	var ol net.Listener // the operator's port, when it is set
	if s.cfg.Server.HTTP.OperatorPort != 0 {
		var err error
		if ol, err = listenOperator(ctx, s.cfg); err != nil {
			l.Close()
			return err
		}
	}
	for _, w := range s.cfg.Warnings() {
		s.logger.Warn(w) // each starts with "config: "
	}
	newServer := func(h http.Handler) *http.Server {
		return &http.Server{
			Handler:           h,
			ReadHeaderTimeout: readHeaderTimeout,
			ReadTimeout:       s.bodyTimeout,
			IdleTimeout:       s.idleTimeout,
			ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelDebug),
		}
	}
	srvs := []*http.Server{newServer(s.handler)}
	listeners := []net.Listener{l}
	backend := "memory"
	if s.cfg.Server.Fleet.Redis != "" {
		backend = "redis"
	}
	logArgs := []any{"url", localURL(l.Addr())}
	if ol != nil {
		srvs = append(srvs, newServer(s.operator))
		listeners = append(listeners, ol)
		logArgs = append(logArgs, "operator_url", localURL(ol.Addr()))
	}
	s.logger.Info("serving", append(logArgs, "backplane", backend)...)

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	g, gctx := errgroup.WithContext(runCtx)
	g.Go(func() error { return s.fleet.Run(gctx) })
	g.Go(func() error { return s.host.Run(gctx) })
	if s.fed != nil {
		g.Go(func() error { return s.fed.run(gctx, s.logger) })
	}
	for i, srv := range srvs {
		g.Go(func() error {
			if err := srv.Serve(listeners[i]); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
	}
	g.Go(func() error {
		// SIGTERM drains: queues (newcomers' too) and lobbies move,
		// rooms finish or are ended at the drain timeout; then the server
		// leaves and everything stops.
		err := s.fleet.DrainOnSignal(gctx)
		stop()
		return err
	})
	g.Go(func() error {
		select {
		case <-s.fleet.Done():
		case <-gctx.Done():
		}
		stop()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		// The relay and the game's and the operator's servers at once:
		// none waits out another's connections, and the listeners close
		// at once. What is still open at the bound is cut, not an error:
		// a request half sent, or one a load balancer sent just now.
		errs := make([]error, len(srvs))
		var wg sync.WaitGroup
		wg.Go(func() { _ = s.relay.Shutdown(sctx) })
		for i, srv := range srvs {
			wg.Go(func() {
				err := srv.Shutdown(sctx)
				if errors.Is(err, context.DeadlineExceeded) {
					s.logger.Warn("connections still open at the shutdown bound were cut", "bound", shutdownTimeout)
					err = srv.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	})
	g.Go(func() error {
		// Ready once the host takes connections: a load balancer that sends
		// a player at once must not meet a 503.
		select {
		case <-s.host.Started():
			s.fleet.MarkReady()
		case <-gctx.Done():
		}
		return nil
	})
	err := g.Wait()
	s.logger.Info("stopped")
	return err
}

func (s *Server) closeBackplane() {
	if s.ownBP && s.bp != nil {
		s.bp.Close()
		s.bp = nil
	}
}
