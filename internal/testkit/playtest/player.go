package playtest

import (
	"fmt"
	"testing"
)

// Tickets issues the ticket a player connects with; room.Tickets does.
type Tickets interface {
	Issue(id string) (string, error)
}

// Player is a client of a room host's /play endpoint that follows
// redirects: it reconnects through its load balancer (some server's
// public URL) with ?node=, as a real client would.
type Player struct {
	// Conn is its current connection; the test's cleanup closes it.
	*Conn
	// ID is the player's id.
	ID string
	// Node is the server it is connected to, from its welcome.
	Node string
	// Moves are the redirect packets it followed.
	Moves []map[string]any

	tb      testing.TB
	lb      string
	tickets Tickets
}

// Connect connects player id, with a ticket from tickets, to the server
// at url (an http:// URL) as a new player; it will reconnect through lb.
func Connect(tb testing.TB, url, lb string, tickets Tickets, id string) *Player {
	tb.Helper()
	p := &Player{ID: id, tb: tb, lb: url, tickets: tickets}
	if err := p.dial("", "new"); err != nil {
		tb.Fatal(err)
	}
	p.lb = lb
	return p
}

// dial connects the player through its load balancer, to node when it is
// not "", says hello in mode and reads the welcome.
func (p *Player) dial(node, mode string) error {
	tk, err := p.tickets.Issue(p.ID)
	if err != nil {
		return err
	}
	query := ""
	if node != "" {
		query = "node=" + node
	}
	c, _, err := TryDial(p.tb, PlayURL(p.lb, withTicket(query, tk)), nil)
	if err != nil {
		return fmt.Errorf("%s: %w", p.ID, err)
	}
	if p.Conn != nil {
		p.Conn.CloseNow()
	}
	p.Conn = c
	if err := c.WritePacket("hello", map[string]string{"mode": mode}); err != nil {
		return fmt.Errorf("%s: write hello: %w", p.ID, err)
	}
	w, err := p.Await("welcome")
	if err != nil {
		return err
	}
	p.Node, _ = w["node"].(string)
	return nil
}

// Await reads until a packet of type typ, following redirects on the
// way. It does not fail the test, so it may run on a goroutine of its
// own.
func (p *Player) Await(typ string) (map[string]any, error) {
	for {
		m, err := p.Receive()
		if err != nil {
			return nil, fmt.Errorf("%s on %s: waiting for %q: %w", p.ID, p.Node, typ, err)
		}
		if m["type"] == typ {
			return m, nil
		}
		if m["type"] == "redirect" {
			p.Moves = append(p.Moves, m)
			if err := p.dial(m["node"].(string), "rejoin"); err != nil {
				return nil, err
			}
		}
	}
}

// Next is Await for the test's goroutine: it fails the test on an error.
func (p *Player) Next(typ string) map[string]any {
	p.tb.Helper()
	m, err := p.Await(typ)
	if err != nil {
		p.tb.Fatal(err)
	}
	return m
}
