package muster_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"
	"go.uber.org/goleak"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/matchmaking"
	"github.com/muster-gg/muster/room"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = muster.WithLogger(slog.New(slog.DiscardHandler))

// A port that is taken, or a host that does not resolve, fails Run with
// a line naming the key and variable that set it; Run used to exit
// silently on the first and give the resolver's error alone on the
// second.
func TestServeNamesVariable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		set      func(h *config.HTTP)
		key, env string
	}{
		{"busy port", func(h *config.HTTP) {
			h.Host, h.Port = "127.0.0.1", loopback(t).Addr().(*net.TCPAddr).Port
		}, "muster.server.http.port", "MUSTER__SERVER__HTTP__PORT"},
		{"unresolvable host", func(h *config.HTTP) {
			h.Host, h.Port = "-5", 1 // a name the resolver refuses without asking DNS
		}, "muster.server.http.host", "MUSTER__SERVER__HTTP__HOST"},
	} {
		cfg := muster.DefaultConfig()
		tc.set(&cfg.Server.HTTP)
		err := muster.Serve(t.Context(), Counter{}, cfg, quiet)
		if err == nil || !strings.Contains(err.Error(), tc.env) || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: Serve: %v, want an error naming %s and %s", tc.name, err, tc.key, tc.env)
		}
	}
}

func TestRunTwice(t *testing.T) {
	s, err := muster.New(Counter{}, muster.DefaultConfig(), muster.WithListener(loopback(t)), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if err := runStopped(s); err != nil {
		t.Fatalf("first Run: %v", err)
	}
	if err := s.Run(t.Context()); err == nil {
		t.Fatal("second Run returned nil")
	}
}

// A guest keeps a plain id it asks for; anything else gets a new one.
func TestGuestTickets(t *testing.T) {
	s := newServer(t, muster.WithGuestTickets("/ticket"))
	for body, keep := range map[string]bool{
		`{"player":"ada-1"}`:                           true,
		`{"player":"a:b"}`:                             false,
		`{"player":"` + strings.Repeat("x", 33) + `"}`: false,
		`not json`: false,
		``:         false,
	} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/ticket", strings.NewReader(body)))
		var got struct{ Ticket, Player string }
		raw, _ := io.ReadAll(rec.Body)
		if err := json.Unmarshal(raw, &got); err != nil || got.Ticket == "" {
			t.Fatalf("POST /ticket %q: %d %s", body, rec.Code, raw)
		}
		if keep != (got.Player == "ada-1") || !keep && !strings.HasPrefix(got.Player, "guest-") {
			t.Errorf("POST /ticket %q gave player %q", body, got.Player)
		}
	}
}

// TestSignIn: WithSignIn's route mints a ticket for the player its
// function names, and refuses without saying why when the function
// refuses; a body larger than the limit never reaches the function whole.
func TestSignIn(t *testing.T) {
	signIn := func(r *http.Request) (string, error) {
		if _, err := io.ReadAll(r.Body); err != nil {
			return "", err
		}
		if r.Header.Get("Authorization") != "Bearer alice's token" {
			return "", errors.New("no such session; secret detail")
		}
		return "alice", nil
	}
	s := newServer(t, muster.WithSignIn("/login", signIn))
	post := func(auth, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec
	}

	rec := post("Bearer alice's token", `{}`)
	var got struct{ Ticket, Player string }
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusOK || got.Player != "alice" {
		t.Fatalf("signed in: %d %s", rec.Code, rec.Body)
	}
	if id, err := s.Tickets().Redeem(t.Context(), got.Ticket); err != nil || id != "alice" {
		t.Fatalf("the ticket redeems as %q, %v; want alice", id, err)
	}
	for _, rec := range []*httptest.ResponseRecorder{
		post("", `{}`),
		post("Bearer bob's token", `{}`),
		post("Bearer alice's token", strings.Repeat("x", 1<<20)),
	} {
		if rec.Code != http.StatusUnauthorized || strings.Contains(rec.Body.String(), "secret") || strings.Contains(rec.Body.String(), "ticket") {
			t.Errorf("refused: %d %q, want 401 without the reason", rec.Code, rec.Body)
		}
	}
}

// The server's routes and the game's own are one handler.
func TestHandlerServesEverything(t *testing.T) {
	s := newServer(t, muster.WithRoutes(func(r chi.Router) {
		r.Get("/hello", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hi") })
	}))
	for path, want := range map[string]int{
		"/hello":                 http.StatusOK,
		"/muster/server/live":    http.StatusOK,
		"/muster/server/ready":   http.StatusServiceUnavailable, // not running
		"/metrics":               http.StatusOK,
		"/muster/dashboard":      http.StatusOK,
		"/muster/server/nothing": http.StatusNotFound,
	} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want {
			t.Errorf("GET %s: %d, want %d", path, rec.Code, want)
		}
	}
}

type homeTokens struct{}

func (homeTokens) CheckTicket(_ context.Context, ticket string) (string, error) {
	if ticket == "home-token-1" {
		return "visitor-1", nil
	}
	return "", room.ErrTicket
}

type watcher chan room.RoomState

func (w watcher) RoomChanged(s room.RoomState) { w <- s }

// Tickets minted elsewhere are accepted through WithTicketCheckers, and
// WithRoomWatchers is told of the rooms.
func TestCheckersAndWatchers(t *testing.T) {
	rooms := make(watcher, 16)
	s := startServer(t, muster.DefaultConfig(), muster.WithTicketCheckers(homeTokens{}), muster.WithRoomWatchers(rooms))
	welcome(t, playtest.DialPlay(t, "http://"+s.addr, "ticket=home-token-1"), "visitor-1")

	ctx := t.Context()
	if err := s.Host().Open(ctx, room.Info{ID: "r1", Kind: "test", Players: []string{"visitor-1"}}); err != nil {
		t.Fatal(err)
	}
	if st := <-rooms; st.ID != "r1" || st.Kind != "test" {
		t.Fatalf("watcher told %+v, want room r1 of kind test", st)
	}
}

// Playlists from config.yml run a queue without WithPlaylists.
func TestConfigPlaylists(t *testing.T) {
	cfg, err := config.Parse([]byte("muster:\n  matchmaking:\n    playlists:\n      - name: from-config\n"), nil, muster.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, cfg)
	c := playtest.DialPlayer(t, "http://"+s.addr, s.Tickets(), "p1", "")
	welcome(t, c, "p1")
	c.Send("queue", map[string]string{"playlist": "from-config"})
	answer := func(m map[string]any) bool {
		typ, _ := m["type"].(string)
		return slices.Contains([]string{"queue.waiting", "queue.error", "error"}, typ)
	}
	if m := c.NextWhere(`a packet of ["queue.waiting" "queue.error" "error"]`, answer); m["type"] != "queue.waiting" {
		t.Fatalf("queue on a playlist from config.yml: %v", m)
	}
}

// A configuration warning is logged once when Run starts, as Warnings
// words it (it used to read "config: config: ...").
func TestRunLogsConfigWarnings(t *testing.T) {
	cfg, err := config.Load("", []string{"MUSTER_SERVER_HTTP_PORT=9000"}, muster.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	s, err := muster.New(Counter{}, cfg, muster.WithListener(loopback(t)), muster.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if err := runStopped(s); err != nil {
		t.Fatal(err)
	}
	want := cfg.Warnings()[0]
	if got := log.String(); strings.Count(got, want) != 1 || strings.Contains(got, "config: config:") {
		t.Fatalf("log:\n%s\nwant the warning %q once, prefixed once", got, want)
	}
}

// TestLogAttributesOnce: no logger the server hands its parts repeats an
// attribute the server's logger already carries (every fleet line had
// node_id twice).
func TestLogAttributesOnce(t *testing.T) {
	t.Parallel()
	h := &keysHandler{dups: new([]string), mu: new(sync.Mutex)}
	newServer(t, muster.WithLogger(slog.New(h)))
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(*h.dups) > 0 {
		t.Errorf("attributes added twice to one logger: %q", *h.dups)
	}
}

// keysHandler is a slog.Handler that logs nothing and records each key
// that a logger's With adds a second time.
type keysHandler struct {
	keys []string
	mu   *sync.Mutex
	dups *[]string
}

func (h *keysHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (h *keysHandler) Handle(context.Context, slog.Record) error { return nil }
func (h *keysHandler) WithGroup(string) slog.Handler {
	return &keysHandler{mu: h.mu, dups: h.dups} // a group's keys are its own
}

func (h *keysHandler) WithAttrs(as []slog.Attr) slog.Handler {
	keys := slices.Clone(h.keys)
	for _, a := range as {
		if slices.Contains(keys, a.Key) {
			h.mu.Lock()
			*h.dups = append(*h.dups, a.Key)
			h.mu.Unlock()
		}
		keys = append(keys, a.Key)
	}
	return &keysHandler{keys: keys, mu: h.mu, dups: h.dups}
}

// TestPlaylistInConfigAndOption: a playlist named both in config.yml and
// in WithPlaylists is refused with an error that says where each is.
func TestPlaylistInConfigAndOption(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load("", []string{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=duo", "MUSTER__MATCHMAKING__PLAYLISTS__1__NAME=race"}, muster.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	_, err = muster.New(Counter{}, cfg, quiet, muster.WithPlaylists(matchmaking.Playlist{Name: "race"}))
	const want = `config: invalid setting: playlist "race" is both item 1 of muster.matchmaking.playlists (MUSTER__MATCHMAKING__PLAYLISTS__1__NAME) and given to WithPlaylists; declare it in one place`
	if err == nil || err.Error() != want || !errors.Is(err, config.ErrInvalid) {
		t.Fatalf("error\n got %v\nwant %s", err, want)
	}
}

// TestRatingsNeedARatedPlaylist: WithRatings with no playlist, or with no
// playlist that looks at ratings, would never be asked: it is refused.
func TestRatingsNeedARatedPlaylist(t *testing.T) {
	t.Parallel()
	ratings := muster.WithRatings(func(context.Context, string, string) (float64, error) { return 1000, nil })
	cfg, err := config.Load("", nil, muster.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := muster.New(Counter{}, cfg, quiet, ratings); !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "muster.matchmaking.playlists") {
		t.Errorf("no playlist: %v, want a config error naming muster.matchmaking.playlists", err)
	}
	if _, err := muster.New(Counter{}, cfg, quiet, ratings, muster.WithPlaylists(matchmaking.Playlist{Name: "race"})); !errors.Is(err, matchmaking.ErrConfig) {
		t.Errorf("no rated playlist: %v, want a matchmaking.ErrConfig", err)
	}
	if _, err := muster.New(Counter{}, cfg, quiet, ratings, muster.WithPlaylists(matchmaking.Playlist{Name: "race", Rating: matchmaking.RatingRule{Window: 100}})); err != nil {
		t.Fatalf("a rated playlist: %v", err)
	}
}

// TestTicketRoutesChecked: a ticket route that is not a path, or a nil
// sign-in function, is refused by New instead of panicking in the router
// or at the first sign-in.
func TestTicketRoutesChecked(t *testing.T) {
	t.Parallel()
	for name, opt := range map[string]muster.Option{
		"guest route":   muster.WithGuestTickets("ticket"),
		"sign-in route": muster.WithSignIn("login", func(*http.Request) (string, error) { return "a", nil }),
		"nil sign-in":   muster.WithSignIn("/login", nil),
		"empty sign-in": muster.WithSignIn("", func(*http.Request) (string, error) { return "a", nil }),
	} {
		if _, err := muster.New(Counter{}, muster.DefaultConfig(), quiet, opt); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}
