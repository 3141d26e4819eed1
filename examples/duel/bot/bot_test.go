package bot_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/muster-gg/muster/examples/duel/bot"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is a scripted stand-in for a fleet behind one address: the
// ?node= parameter picks the fake server that answers (default "a"), and
// the test's script plays that server's part after the hello.
type fake struct {
	t      *testing.T
	srv    *httptest.Server
	script func(c *fakeConn)

	mu      sync.Mutex
	tickets map[string]string
	issued  int
	plays   []string // "node ticket" of each /play request, in order
	hellos  []string // "node mode", in order
	wg      sync.WaitGroup
}

type fakeConn struct {
	t      *testing.T
	node   string
	player string
	ws     *websocket.Conn
}

func newFake(t *testing.T, script func(c *fakeConn)) *fake {
	f := &fake{t: t, script: script, tickets: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ticket", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Player string }
		json.NewDecoder(r.Body).Decode(&req)
		if req.Player == "" {
			req.Player = "guest-1"
		}
		f.mu.Lock()
		f.issued++
		tk := fmt.Sprintf("t%d", f.issued)
		f.tickets[tk] = req.Player
		f.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]string{"ticket": tk, "player": req.Player})
	})
	mux.HandleFunc("GET /play", func(w http.ResponseWriter, r *http.Request) {
		f.wg.Add(1)
		defer f.wg.Done()
		f.mu.Lock()
		player, ok := f.tickets[r.URL.Query().Get("ticket")]
		delete(f.tickets, r.URL.Query().Get("ticket"))
		f.plays = append(f.plays, strings.TrimSpace(r.URL.Query().Get("node")+" "+r.URL.Query().Get("ticket")))
		f.mu.Unlock()
		if !ok {
			http.Error(w, "bad ticket", http.StatusForbidden)
			return
		}
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		c := &fakeConn{t: t, node: r.URL.Query().Get("node"), player: player, ws: ws}
		if c.node == "" {
			c.node = "a"
		}
		hello := c.expect("hello")
		var h struct{ Mode string }
		json.Unmarshal(hello, &h)
		f.mu.Lock()
		f.hellos = append(f.hellos, c.node+" "+h.Mode)
		f.mu.Unlock()
		f.script(c)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		f.srv.CloseClientConnections()
		f.srv.Close()
		f.wg.Wait()
	})
	return f
}

// give makes ticket good for player, as a server's redirect does.
func (f *fake) give(ticket, player string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tickets[ticket] = player
}

func (f *fake) Plays() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.plays...)
}

func (f *fake) Hellos() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.hellos...)
}

func (c *fakeConn) send(v any) {
	data, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c.ws.Write(ctx, websocket.MessageText, data)
}

// expect reads messages until one of type typ, skipping inputs, and
// returns its data; nil when the connection ends first.
func (c *fakeConn) expect(typ string) json.RawMessage {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		_, data, err := c.ws.Read(ctx)
		if err != nil {
			return nil
		}
		var m struct {
			Type string
			Data json.RawMessage
		}
		json.Unmarshal(data, &m)
		if m.Type == typ {
			return m.Data
		}
	}
}

// redirect sends the bot to server b for reason, as a server does:
// the redirect, with the packet's other fields from extra (key, value
// pairs), then a normal close.
func (c *fakeConn) redirect(reason string, extra ...string) {
	m := map[string]string{"type": "redirect", "node": "b", "param": "node", "reason": reason}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	c.send(m)
	c.ws.Close(websocket.StatusNormalClosure, "redirect")
}

func (c *fakeConn) welcome(room string) {
	c.send(map[string]string{"type": "welcome", "node": c.node, "player": c.player, "room": room})
}

func (c *fakeConn) state(x float64) {
	c.send(map[string]any{"type": "state", "players": []map[string]any{{"ID": c.player, "X": x, "Y": 100}}, "orbX": 400, "orbY": 100})
}

// play sends snapshots until it has seen n inputs.
func (c *fakeConn) play(n int) {
	for range n {
		c.state(100)
		if c.expect("input") == nil {
			return
		}
	}
}

func newBot(t *testing.T, f *fake, cfg bot.Config) *bot.Bot {
	t.Helper()
	cfg.URL = f.srv.URL
	cfg.HTTPClient = f.srv.Client()
	b, err := bot.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func run(t *testing.T, b *bot.Bot) (context.CancelFunc, <-chan error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-b.Done()
	})
	return cancel, done
}

// A queued bot is redirected to the gather server with a new ticket and
// ?node=, says rejoin, plays its match by chasing the orb and stops.
func TestQueueRedirectPlay(t *testing.T) {
	f := newFake(t, func(c *fakeConn) {
		switch c.node {
		case "a":
			c.welcome("")
			if c.expect("queue") != nil {
				c.redirect("queue")
			}
		case "b":
			c.welcome("")
			c.send(map[string]any{"type": "queue.waiting", "playlist": "duel", "waited_ms": 1200, "node": "b"})
			c.send(map[string]string{"type": "room", "room": "r1", "kind": "duel"})
			c.play(3)
			c.send(map[string]string{"type": "room_end", "room": "r1", "reason": "won by " + c.player})
			c.expect("never") // until the bot closes
		}
	})
	b := newBot(t, f, bot.Config{Player: "p1", Matches: 1})
	_, done := run(t, b)
	b.Queue("duel")
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	r := b.Report()
	if got, want := strings.Join(f.Hellos(), ","), "a new,b rejoin"; got != want {
		t.Errorf("hellos %s, want %s", got, want)
	}
	if got := strings.Join(r.Nodes, ","); got != "a,b" {
		t.Errorf("nodes %s, want a,b", got)
	}
	if len(r.Redirects) != 1 || r.Redirects[0].To != "b" || r.Redirects[0].Reason != "queue" {
		t.Errorf("redirects %+v", r.Redirects)
	}
	if len(r.Waits) != 1 || r.Waits[0].Waited != 1200*time.Millisecond || r.Waits[0].Node != "b" {
		t.Errorf("waits %+v", r.Waits)
	}
	if len(r.Rooms) != 1 || r.Rooms[0].Node != "b" || r.Rooms[0].Reason != "won by p1" || r.Rooms[0].Inputs < 3 || r.Rooms[0].Queued <= 0 {
		t.Errorf("rooms %+v", r.Rooms)
	}
	if !r.AlwaysConnected() || r.Requeues != 0 {
		t.Errorf("failures %v, drops %v, requeues %d", r.Failures, r.Drops, r.Requeues)
	}
	if len(r.Reconnects) != 1 || r.Reconnects[0].Cause != "redirect" {
		t.Errorf("reconnects %+v", r.Reconnects)
	}
}

// A redirect that carries a ticket and a query, as the room host's does,
// is followed with them: the bot does not ask for another ticket. When the
// given ticket is refused, the next attempt asks for a new one.
func TestRedirectTicket(t *testing.T) {
	for _, tc := range []struct {
		name    string
		good    bool // the redirect's ticket is one the fake accepts
		plays   string
		tickets int
	}{
		{"given", true, "t1,b given", 1},
		{"given and refused", false, "t1,b given,b t2", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f *fake
			f = newFake(t, func(c *fakeConn) {
				switch c.node {
				case "a": // the fleet finds the room on b
					c.welcome("")
					if tc.good {
						f.give("given", c.player)
					}
					c.redirect("rejoin", "ticket", "given", "query", "node=b&ticket=given")
				case "b":
					c.welcome("r1")
					c.play(1000)
				}
			})
			b := newBot(t, f, bot.Config{Player: "p1"})
			run(t, b)
			ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
			defer stop()
			if err := b.Wait(ctx, func(r bot.Report) bool { rm, ok := r.Room(); return ok && rm.Node == "b" }); err != nil {
				t.Fatalf("seat on b: %v\n%s", err, b.Report().Log())
			}
			r := b.Report()
			if got := strings.Join(f.Plays(), ","); got != tc.plays {
				t.Errorf("/play requests %s, want %s", got, tc.plays)
			}
			if r.Tickets != tc.tickets {
				t.Errorf("asked for %d tickets, want %d", r.Tickets, tc.tickets)
			}
			if got := strings.Join(f.Hellos(), ","); got != "a new,b rejoin" {
				t.Errorf("hellos %s, want a new,b rejoin", got)
			}
		})
	}
}

// A bot that drops mid-match is back in its room: at once when it names
// its server, through a rejoin redirect when it names none.
func TestDropRejoin(t *testing.T) {
	for _, tc := range []struct {
		name     string
		anywhere bool
		hellos   string
		conns    int
	}{
		{"named server", false, "a new,b rejoin,b rejoin", 1},
		{"anywhere", true, "a new,b rejoin,a rejoin,b rejoin", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(c *fakeConn) {
				switch c.node {
				case "a": // the fleet finds the room on b
					c.welcome("")
					c.redirect("rejoin")
				case "b":
					c.welcome("r1")
					c.play(1000)
				}
			})
			b := newBot(t, f, bot.Config{Player: "p1", Anywhere: tc.anywhere})
			run(t, b)
			ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
			defer stop()
			inRoom := func(r bot.Report) bool { rm, ok := r.Room(); return ok && rm.Inputs > 0 }
			if err := b.Wait(ctx, inRoom); err != nil {
				t.Fatalf("first seat: %v\n%s", err, b.Report().Log())
			}
			b.Drop()
			if err := b.Wait(ctx, func(r bot.Report) bool { return len(r.Rejoins) > 0 }); err != nil {
				t.Fatalf("rejoin: %v\n%s", err, b.Report().Log())
			}
			r := b.Report()
			rj := r.Rejoins[0]
			if got := strings.Join(f.Hellos(), ","); got != tc.hellos {
				t.Errorf("hellos %s, want %s", got, tc.hellos)
			}
			if rj.Room != "r1" || rj.Connections != tc.conns || rj.Took <= 0 || rj.Took > 2*time.Second {
				t.Errorf("rejoin %+v", rj)
			}
			if len(r.Drops) != 0 || len(r.Failures) != 0 {
				t.Errorf("drops %v failures %v", r.Drops, r.Failures)
			}
			if len(r.Rooms) != 1 {
				t.Errorf("rooms %+v", r.Rooms)
			}
			t.Logf("back in the room after %v over %d connection(s); hellos %v", rj.Took, rj.Connections, f.Hellos())
		})
	}
}

// A close for a protocol error (a message type the server does not
// handle) ends Run with a *CloseError; a server that drops the
// connection is recorded, and the bot queues again after reconnecting.
func TestCloses(t *testing.T) {
	t.Run("unknown type", func(t *testing.T) {
		f := newFake(t, func(c *fakeConn) {
			c.welcome("")
			c.expect("queue")
			c.ws.Close(websocket.StatusCode(4003), "unknown packet type queue")
		})
		b := newBot(t, f, bot.Config{})
		_, done := run(t, b)
		b.Queue("duel")
		err := <-done
		var ce *bot.CloseError
		if !errors.As(err, &ce) || ce.Code != bot.StatusUnknownType {
			t.Fatalf("Run: %v, want a CloseError 4003", err)
		}
		if r := b.Report(); r.Player != "guest-1" {
			t.Errorf("player %q, want the server's guest id", r.Player)
		}
	})
	t.Run("drop while waiting", func(t *testing.T) {
		var mu sync.Mutex
		conns := 0
		f := newFake(t, func(c *fakeConn) {
			mu.Lock()
			conns++
			n := conns
			mu.Unlock()
			c.welcome("")
			if c.expect("queue") == nil {
				return
			}
			c.send(map[string]any{"type": "queue.waiting", "playlist": "duel"})
			if n == 1 {
				c.ws.CloseNow() // the server dies
				return
			}
			c.expect("never")
		})
		b := newBot(t, f, bot.Config{Player: "p2"})
		run(t, b)
		b.Queue("duel")
		ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
		defer stop()
		if err := b.Wait(ctx, func(r bot.Report) bool { return len(r.Waits) == 2 }); err != nil {
			t.Fatalf("%v\n%s", err, b.Report().Log())
		}
		r := b.Report()
		if len(r.Drops) != 1 || r.Requeues != 1 || len(r.Reconnects) != 1 || r.Reconnects[0].Cause != "drop" {
			t.Errorf("drops %+v requeues %d reconnects %+v", r.Drops, r.Requeues, r.Reconnects)
		}
		if r.AlwaysConnected() {
			t.Error("AlwaysConnected after a drop")
		}
	})
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  bot.Config
		want string
	}{
		{"no url", bot.Config{}, "Config.URL"},
		{"ws url", bot.Config{URL: "ws://x/"}, "Config.URL"},
		{"style", bot.Config{URL: "http://x/", Style: "wild"}, "Config.Style"},
		{"rate", bot.Config{URL: "http://x/", InputRate: -1}, "Config.InputRate"},
		{"client timeout", bot.Config{URL: "http://x/", HTTPClient: &http.Client{Timeout: time.Second}}, "Timeout"},
		{"ok", bot.Config{URL: "http://x/game"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bot.New(tc.cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("New: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// A bot stopped in the middle of a match gives up its seat before it
// closes, however its inputs and its stop interleave: a seat left behind
// would hold its room (and a drain) open.
func TestStopLeaves(t *testing.T) {
	for i := range 20 {
		left := make(chan bool, 1)
		f := newFake(t, func(c *fakeConn) {
			c.welcome("")
			c.send(map[string]string{"type": "room", "room": "r1", "kind": "duel"})
			stop, stopped := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(stopped)
				for {
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
						c.state(100)
					}
				}
			}()
			left <- c.expect("leave") != nil
			close(stop)
			<-stopped
		})
		b := newBot(t, f, bot.Config{Player: fmt.Sprintf("p%d", i), InputRate: 1000})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- b.Run(ctx) }()
		wctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
		if err := b.Wait(wctx, func(r bot.Report) bool { rm, ok := r.Room(); return ok && rm.Inputs > 0 }); err != nil {
			t.Fatal(err)
		}
		stop()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if !<-left {
			t.Fatalf("run %d: the bot closed without leaving its room\n%s", i, b.Report().Log())
		}
		if r := b.Report(); r.Rooms[0].Reason != "left" || len(r.Drops) > 0 {
			t.Fatalf("run %d: room %+v, drops %+v", i, r.Rooms[0], r.Drops)
		}
	}
}
