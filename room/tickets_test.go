package room

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/internal/testkit/playtest"
)

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
