package muster

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/matchmaking"
	"github.com/muster-gg/muster/room"
)

// An Option changes how New builds a Server.
type Option func(*options)

type options struct {
	modules      []room.Module
	playlists    []matchmaking.Playlist
	lobbies      bool
	routes       []func(chi.Router)
	guestTickets string
	signIns      []signInRoute
	logger       *slog.Logger
	backplane    backplane.Backplane
	listener     net.Listener
	registry     *prometheus.Registry
	codec        room.Codec
	checkers     []room.TicketChecker
	watchers     []room.RoomWatcher
	ratings      func(ctx context.Context, player, playlist string) (float64, error)
	// idleTimeout and bodyTimeout replace idleTimeout and bodyTimeout of
	// package muster when set, for tests.
	idleTimeout, bodyTimeout time.Duration
}

// WithModules adds room modules: the game's own, or matchmaking and
// lobby modules built by hand. The host runs each module's Run. New
// returns room.Host.Use's error for a module with a method named like an
// optional module interface's that does not implement it
// (room.ErrModuleHook).
func WithModules(m ...room.Module) Option {
	return func(o *options) { o.modules = append(o.modules, m...) }
}

// WithPlaylists adds these playlists to those of
// muster.matchmaking.playlists; with any, the server runs a matchmaking
// module (see package matchmaking): clients send
// {"type":"queue","data":{"playlist":name}}.
func WithPlaylists(pl ...matchmaking.Playlist) Option {
	return func(o *options) { o.playlists = append(o.playlists, pl...) }
}

// WithRatings has the game rate its players for the playlists with a
// rating rule, from its own records: ratings(ctx, player, playlist) is
// asked when a player queues, and the rating a client sends is then
// ignored, so that no player picks its opponents by claiming another's
// rating. A player it fails for is refused with queue.error. It runs on
// the player's connection; keep it quick (see matchmaking.Config.Ratings).
func WithRatings(ratings func(ctx context.Context, player, playlist string) (float64, error)) Option {
	return func(o *options) { o.ratings = ratings }
}

// WithLobbies adds a lobby module configured by muster.lobby (see package
// lobby): clients create a lobby, share its code, and start a room with
// their friends.
func WithLobbies() Option {
	return func(o *options) { o.lobbies = true }
}

// WithRoutes mounts the game's own HTTP routes beside the server's:
// routes is called once with the router, after the server's routes.
func WithRoutes(routes func(r chi.Router)) Option {
	return func(o *options) { o.routes = append(o.routes, routes) }
}

// WithGuestTickets mounts POST path, which mints a ticket for a guest: the
// player id of the JSON body {"player": id} when it is a short, plain id
// (so a returning guest keeps its seat), or a new "guest-…" id. It answers
// {"ticket": t, "player": id}. Anyone may claim any id through it: it
// suits development and guest play. A game with accounts uses WithSignIn.
func WithGuestTickets(path string) Option {
	return func(o *options) { o.guestTickets = path }
}

// WithSignIn mounts POST path, where players of a game with accounts sign
// in: signIn reads the request (a cookie, a header, a form; its body is
// limited to 64 KiB) and returns the player's id, or an error when the
// request proves no player, which answers 401 and says nothing of why. A
// player signed in gets {"ticket": t, "player": id}, as from
// WithGuestTickets.
func WithSignIn(path string, signIn func(r *http.Request) (playerID string, err error)) Option {
	return func(o *options) { o.signIns = append(o.signIns, signInRoute{path, signIn}) }
}

// check refuses options that cannot work: a route that is not a path, a
// nil sign-in function.
func (o *options) check() error {
	if o.guestTickets != "" && !strings.HasPrefix(o.guestTickets, "/") {
		return fmt.Errorf("muster: WithGuestTickets(%q): want a path starting with /", o.guestTickets)
	}
	for _, si := range o.signIns {
		switch {
		case !strings.HasPrefix(si.path, "/"):
			return fmt.Errorf("muster: WithSignIn(%q): want a path starting with /", si.path)
		case si.signIn == nil:
			return fmt.Errorf("muster: WithSignIn(%q): the sign-in function is nil", si.path)
		}
	}
	return nil
}

// signInRoute is one WithSignIn.
type signInRoute struct {
	path   string
	signIn func(*http.Request) (string, error)
}

// WithLogger sets the logger. Default slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithBackplane uses b instead of the backplane the configuration names.
// The caller closes it after Run returns.
func WithBackplane(b backplane.Backplane) Option {
	return func(o *options) { o.backplane = b }
}

// WithListener serves on l instead of listening on muster.server.http.
// Run closes it.
func WithListener(l net.Listener) Option {
	return func(o *options) { o.listener = l }
}

// WithRegistry registers the server's metrics with reg, served at
// /metrics. Default a registry of the server's own.
func WithRegistry(reg *prometheus.Registry) Option {
	return func(o *options) { o.registry = reg }
}

// WithCodec replaces the JSON codec of the game's packets.
func WithCodec(c room.Codec) Option {
	return func(o *options) { o.codec = c }
}

// WithTicketCheckers accepts tickets minted elsewhere, such as a
// federation home's tokens: a ticket the server's own Tickets refuse is
// offered to each checker in order (see room.TicketChecker).
func WithTicketCheckers(tc ...room.TicketChecker) Option {
	return func(o *options) { o.checkers = append(o.checkers, tc...) }
}

// WithRoomWatchers tells each watcher of every room's state as it opens,
// changes seats and ends (see room.RoomWatcher), e.g. to report rooms to
// a federation home.
func WithRoomWatchers(w ...room.RoomWatcher) Option {
	return func(o *options) { o.watchers = append(o.watchers, w...) }
}

// guestTickets is the handler of WithGuestTickets.
func guestTickets(t *room.Tickets) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Player string `json:"player"`
		}
		json.NewDecoder(http.MaxBytesReader(w, r.Body, 1024)).Decode(&req) // a bad body is a new guest
		if !plainID(req.Player) {
			req.Player = "guest-" + strings.ToLower(rand.Text()[:8])
		}
		issueTicket(w, t, req.Player)
	}
}

// signInHandler is the handler of WithSignIn.
func signInHandler(t *room.Tickets, signIn func(*http.Request) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		id, err := signIn(r)
		if err != nil || id == "" {
			w.Header().Set("Cache-Control", "no-store")
			http.Error(w, "not signed in", http.StatusUnauthorized)
			return
		}
		issueTicket(w, t, id)
	}
}

// issueTicket answers {"ticket": t, "player": id} with a new ticket for id.
func issueTicket(w http.ResponseWriter, t *room.Tickets, id string) {
	ticket, err := t.Issue(id)
	if err != nil {
		http.Error(w, "cannot issue a ticket", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(map[string]string{"ticket": ticket, "player": id})
}

// plainID reports whether id is a player id a guest may keep: 1-32 bytes
// of letters, digits, '-', '_' and '.'.
func plainID(id string) bool {
	if id == "" || len(id) > 32 || !utf8.ValidString(id) {
		return false
	}
	for _, c := range id {
		ok := c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !ok {
			return false
		}
	}
	return true
}
