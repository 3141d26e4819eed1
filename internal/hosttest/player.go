package hosttest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/room"
)

// Player is a client of a room host's /play endpoint that follows
// redirects: it reconnects through its load balancer (some server's
// public URL) with ?node=, as a real client would.
type Player struct {
	// ID is the player's id.
	ID string
	// Conn is its current connection; the test's cleanup closes it.
	Conn *websocket.Conn
	// Node is the server it is connected to, from its welcome.
	Node string
	// Moves are the redirect packets it followed.
	Moves []map[string]any

	tb      testing.TB
	lb      string
	tickets *room.Tickets
}

// Connect connects player id, with a ticket from tickets, to the server
// at url; it will reconnect through lb.
func Connect(tb testing.TB, url, lb string, tickets *room.Tickets, id string) *Player {
	tb.Helper()
	p := &Player{ID: id, tb: tb, lb: url, tickets: tickets}
	if err := p.dial("", "new"); err != nil {
		tb.Fatal(err)
	}
	p.lb = lb
	tb.Cleanup(func() { p.Conn.CloseNow() })
	return p
}

func (p *Player) dial(node, mode string) error {
	tk, err := p.tickets.Issue(p.ID)
	if err != nil {
		return err
	}
	url := "ws" + strings.TrimPrefix(p.lb, "http") + "/play?ticket=" + tk
	if node != "" {
		url += "&node=" + node
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return fmt.Errorf("%s: dial: %w", p.ID, err)
	}
	if p.Conn != nil {
		p.Conn.CloseNow()
	}
	p.Conn = c
	if err := p.write("hello", map[string]string{"mode": mode}); err != nil {
		return err
	}
	w, err := p.Await("welcome")
	if err != nil {
		return err
	}
	p.Node, _ = w["node"].(string)
	return nil
}

func (p *Player) write(typ string, data any) error {
	frame, _ := json.Marshal(map[string]any{"type": typ, "data": data})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Conn.Write(ctx, websocket.MessageText, frame); err != nil {
		return fmt.Errorf("%s: write %s: %w", p.ID, typ, err)
	}
	return nil
}

// Await reads until a packet of type typ, following redirects on the
// way. It does not fail the test, so it may run on a goroutine of its
// own.
func (p *Player) Await(typ string) (map[string]any, error) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, data, err := p.Conn.Read(ctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%s on %s: waiting for %q: %w", p.ID, p.Node, typ, err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("%s: undecodable packet %q", p.ID, data)
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

// Send writes a packet of type typ with data; it fails the test on an
// error, so it is for the test's goroutine.
func (p *Player) Send(typ string, data any) {
	p.tb.Helper()
	if err := p.write(typ, data); err != nil {
		p.tb.Fatal(err)
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
