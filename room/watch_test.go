package room

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// watcher records the states it is told.
type watcher struct {
	mu     sync.Mutex
	states []RoomState
	ended  chan struct{}
}

func (w *watcher) RoomChanged(s RoomState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.states = append(w.states, s)
	if s.Ended {
		close(w.ended)
	}
}

func (w *watcher) seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, s := range w.states {
		out = append(out, fmt.Sprintf("%s %s %v %v", s.ID, s.Kind, s.Players, s.Ended))
	}
	return out
}

func TestRoomWatcherToldOfOpenSeatsAndEnd(t *testing.T) {
	h := newHost(t, newCounter(), Config{})
	w := &watcher{ended: make(chan struct{})}
	h.AddRoomWatcher(w)
	runHost(t, h)
	r, err := h.OpenRoom(t.Context(), Info{ID: "a", Kind: "duel", Players: []string{"p2", "p1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Seat(t.Context(), "a", "p3"); err != nil {
		t.Fatal(err)
	}
	h.Unseat("p1")
	testrun.WaitFor(t, "p1 is out of the room", func() bool { return !slices.Contains(r.Players(), "p1") })
	r.End("over")
	<-w.ended
	want := []string{
		"a duel [p1 p2] false",
		"a duel [p1 p2 p3] false",
		"a duel [p2 p3] false",
		"a duel [p2 p3] true",
	}
	if got := w.seen(); !slices.Equal(got, want) {
		t.Fatalf("states\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// checker is a TicketChecker that knows the tickets "home:<id>" and fails
// with err for "down".
type checker struct{ err error }

func (c checker) CheckTicket(_ context.Context, ticket string) (string, error) {
	if id, ok := strings.CutPrefix(ticket, "home:"); ok {
		return id, nil
	}
	if ticket == "down" && c.err != nil {
		return "", c.err
	}
	return "", fmt.Errorf("not a home ticket: %w", ErrTicket)
}

func TestTicketCheckersAskedAfterOwnTickets(t *testing.T) {
	h, srv := startHost(t, Config{})
	h.AddTicketChecker(checker{})
	h.AddTicketChecker(checker{err: errors.New("home unreachable")})
	hello := `{"type":"hello","data":{"mode":"new"}}`

	c := playtest.DialPlay(t, srv.URL, "ticket=home:alice")
	c.SendText(hello)
	if m := c.Next("welcome"); m["player"] != "alice" {
		t.Fatalf("welcome %v, want alice from the checker", m)
	}
	c = playtest.DialPlayer(t, srv.URL, h.Tickets(), "bob", "")
	c.SendText(hello)
	if m := c.Next("welcome"); m["player"] != "bob" {
		t.Fatalf("welcome %v, want bob from the host's tickets", m)
	}
	c = playtest.DialPlay(t, srv.URL, "ticket=nobody.knows")
	c.SendText(hello)
	if code := c.CloseCode(); code != StatusBadTicket {
		t.Fatalf("a ticket nobody knows closed with %d, want %d", code, StatusBadTicket)
	}
	c = playtest.DialPlay(t, srv.URL, "ticket=down")
	c.SendText(hello)
	if code := c.CloseCode(); code != 1013 {
		t.Fatalf("a checker that cannot check closed with %d, want 1013", code)
	}
}

func TestConfigErrorsAreErrConfig(t *testing.T) {
	cases := map[string]Config{
		"rate":            {Rate: 5000},
		"workers":         {Workers: -1},
		"hello-timeout":   {HelloTimeout: -time.Second},
		"limits.store":    {Limits: Limits{Store: "disk"}},
		"limits.lockout":  {Limits: Limits{Lockout: -1}},
		"limits.connects": {Limits: Limits{Connects: -1}},
		"limits.open":     {Limits: Limits{Open: -1}},
	}
	for key, cfg := range cases {
		t.Run(key, func(t *testing.T) {
			_, err := New[*csim, int, *cplayer](newCounter(), cfg, quietLog)
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("New: %v, want ErrConfig", err)
			}
			env := "MUSTER__ROOM__" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "__").Replace(key))
			if !strings.Contains(err.Error(), "muster.room."+key) || !strings.Contains(err.Error(), env) {
				t.Fatalf("error %q names neither muster.room.%s nor %s", err, key, env)
			}
		})
	}
}

func TestNewTicketsForASignInService(t *testing.T) {
	signIn, err := NewTickets("fleet secret", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	h, srv := startHost(t, Config{Secret: "fleet secret"})
	tk, err := signIn.Issue("alice")
	if err != nil {
		t.Fatal(err)
	}
	c := playtest.DialPlay(t, srv.URL, "ticket="+tk)
	if m := c.Welcome("new"); m["player"] != "alice" {
		t.Fatalf("welcome %v", m)
	}
	if _, err := h.Tickets().Redeem(t.Context(), tk); !errors.Is(err, ErrTicket) {
		t.Fatalf("second use of a sign-in ticket: %v, want ErrTicket", err)
	}
	other, _ := NewTickets("another fleet", 0)
	tk, _ = other.Issue("mallory")
	if _, err := h.Tickets().Redeem(t.Context(), tk); !errors.Is(err, ErrTicket) {
		t.Fatalf("a ticket of another secret: %v, want ErrTicket", err)
	}
	if _, err := NewTickets("", 0); !errors.Is(err, ErrConfig) {
		t.Fatalf("NewTickets without a secret: %v, want ErrConfig", err)
	}
}

func TestDt(t *testing.T) {
	h := newHost(t, newCounter(), Config{Rate: 50})
	r, err := h.OpenRoom(t.Context(), Info{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Dt() != 20*time.Millisecond {
		t.Fatalf("Dt %v at 50 Hz", r.Dt())
	}
}
