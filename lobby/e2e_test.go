package lobby_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/fleettest"
	"github.com/muster-gg/muster/lobby"
	"github.com/muster-gg/muster/relay"
	"github.com/muster-gg/muster/room"
)

// This file runs servers with real WebSockets on loopback, each behind its
// relay, on one fleet with a short heartbeat: the end-to-end path of the
// module-level tests.

var quiet = slog.New(slog.DiscardHandler)

// game is a test game whose rooms end after matchLen steps (never when 0).
type game struct{ matchLen uint64 }

type sim struct{}

func (g game) NewSim(room.Info) *sim                                  { return &sim{} }
func (g game) Join(_ *room.Room[*sim, int, string], id string) string { return id }
func (g game) Leave(*room.Room[*sim, int, string], string)            {}
func (g game) Input(*room.Room[*sim, int, string], string, int)       {}
func (g game) FixedStep(r *room.Room[*sim, int, string]) {
	if g.matchLen > 0 && r.Step() == g.matchLen {
		r.End("match over")
	}
}
func (game) Redirect(r room.Redirect) room.Packet {
	return map[string]string{"type": "redirect", "node": r.NodeID, "param": r.NodeParam, "reason": r.Reason}
}
func (game) ServerDraining() room.Packet { return map[string]string{"type": "server_draining"} }

type server struct {
	*fleettest.Server
	host *room.Host[*sim, int, string]
	lm   *lobby.Module[*sim, int, string]
	url  string
}

type setup struct {
	servers  int
	matchLen uint64
}

// heartbeat and cooldown of the socket tests: short, so that the tests
// are quick; the module-level tests use the defaults.
// The backplane calls and the relay's dials get generous deadlines: the
// tests run with -race on shared machines, where a 25 ms backplane
// deadline is missed now and then (the server then serves alone for a
// heartbeat) and fifty players reconnecting at once through the relay can
// take more than its default second to be answered (the relay then serves
// them locally, without their handoff).
const (
	heartbeat   = 300 * time.Millisecond
	callTimeout = 250 * time.Millisecond
	cooldown    = 200 * time.Millisecond
)

// startServers runs the servers until the test ends and waits until each
// sees all.
func startServers(tb testing.TB, o setup) []*server {
	tb.Helper()
	https := make([]*httptest.Server, o.servers)
	for i := range https {
		https[i] = httptest.NewUnstartedServer(nil)
	}
	c := fleettest.Start(tb, o.servers, func(i int, cfg *fleet.Config) {
		cfg.Heartbeat, cfg.CallTimeout = heartbeat, callTimeout
		cfg.InternalAddress = https[i].Listener.Addr().String()
		cfg.DrainTimeout = 20 * time.Second
	})
	var out []*server
	for i, s := range c.Servers {
		h, err := room.New[*sim, int, string](game{o.matchLen}, room.Config{Secret: "shared", MoveCooldown: cooldown, Limits: room.Limits{Connects: 1 << 20}}, quiet)
		if err != nil {
			tb.Fatal(err)
		}
		lm, err := lobby.New[*sim, int, string](lobby.Config{Tick: 20 * time.Millisecond})
		if err != nil {
			tb.Fatal(err)
		}
		if err := h.Use(lm); err != nil {
			tb.Fatal(err)
		}
		h.UseServer(s.Fleet)
		h.UseFleet(s.Fleet)
		rl, err := relay.New(relay.Config{NodeID: s.ID(), Secret: "shared relay secret, long enough", DialTimeout: 10 * time.Second}, s.Fleet, quiet)
		if err != nil {
			tb.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/play", h.Handler())
		https[i].Config.Handler = rl.Middleware(mux)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, run := range []func(context.Context) error{h.Run, lm.Run} {
			wg.Go(func() {
				if err := run(ctx); err != nil {
					tb.Error(err)
				}
			})
		}
		https[i].Start()
		tb.Cleanup(func() {
			https[i].Close()
			rl.Close()
			cancel()
			wg.Wait()
		})
		out = append(out, &server{Server: s, host: h, lm: lm, url: https[i].URL})
	}
	waitFor(tb, "servers see each other", func() bool {
		for _, s := range out {
			if len(s.Nodes()) != o.servers {
				return false
			}
		}
		return true
	})
	return out
}

// waitFor polls cond until it holds, for at most 10 s.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// byID returns the server id.
func byID(servers []*server, id string) *server {
	for _, s := range servers {
		if s.ID() == id {
			return s
		}
	}
	return nil
}

// player is a client that follows redirects: it reconnects through lb
// (the load balancer: some server's public URL) with ?node=.
type player struct {
	tb     testing.TB
	id     string
	lb     string
	issuer *room.Host[*sim, int, string]
	conn   *websocket.Conn
	node   string // the server it is connected to, from its welcome
	moves  []map[string]any
}

// connect connects player id to the server at url; it will reconnect
// through lb.
func connect(tb testing.TB, url, lb string, issuer *room.Host[*sim, int, string], id string) *player {
	tb.Helper()
	p := &player{tb: tb, id: id, lb: url, issuer: issuer}
	if err := p.dial("", "new"); err != nil {
		tb.Fatal(err)
	}
	p.lb = lb
	tb.Cleanup(func() { p.conn.CloseNow() })
	return p
}

func (p *player) dial(node, mode string) error {
	tk, err := p.issuer.Tickets().Issue(p.id)
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
		return fmt.Errorf("%s: dial: %w", p.id, err)
	}
	if p.conn != nil {
		p.conn.CloseNow()
	}
	p.conn = c
	if err := p.write("hello", map[string]string{"mode": mode}); err != nil {
		return err
	}
	w, err := p.await("welcome")
	if err != nil {
		return err
	}
	p.node, _ = w["node"].(string)
	return nil
}

func (p *player) write(typ string, data any) error {
	frame, _ := json.Marshal(map[string]any{"type": typ, "data": data})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.conn.Write(ctx, websocket.MessageText, frame); err != nil {
		return fmt.Errorf("%s: write %s: %w", p.id, typ, err)
	}
	return nil
}

// await reads until a packet of type typ, following redirects on the way.
func (p *player) await(typ string) (map[string]any, error) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, data, err := p.conn.Read(ctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%s on %s: waiting for %q: %w", p.id, p.node, typ, err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("%s: undecodable packet %q", p.id, data)
		}
		if m["type"] == typ {
			return m, nil
		}
		if m["type"] == "redirect" {
			p.moves = append(p.moves, m)
			if err := p.dial(m["node"].(string), "rejoin"); err != nil {
				return nil, err
			}
		}
	}
}

// send and next are write and await for the test's goroutine.
func (p *player) send(typ string, data any) {
	p.tb.Helper()
	if err := p.write(typ, data); err != nil {
		p.tb.Fatal(err)
	}
}

func (p *player) next(typ string) map[string]any {
	p.tb.Helper()
	m, err := p.await(typ)
	if err != nil {
		p.tb.Fatal(err)
	}
	return m
}

// A code made on A and typed on B and C lands all three on A through the
// relay, with the right host; the host leaves: a new host; the new host
// starts the match.
func TestSocketCodeEverywhere(t *testing.T) {
	servers := startServers(t, setup{servers: 3})
	a, b, c := servers[0], servers[1], servers[2]
	host := connect(t, a.url, a.url, a.host, "host")
	host.send(lobby.MsgCreate, nil)
	st := host.next(lobby.TypeState)
	code := st["code"].(string)
	if st["host"] != "host" || st["node"] != a.ID() || len(code) != 5 {
		t.Fatalf("created %v", st)
	}
	var members []*player
	for _, s := range []*server{b, c} {
		p := connect(t, s.url, s.url, s.host, "on-"+s.ID())
		time.Sleep(cooldown) // a join typed sooner waits for it
		p.send(lobby.MsgJoin, map[string]string{"code": strings.ToLower(code)})
		st := p.next(lobby.TypeState)
		if st["node"] != a.ID() || st["host"] != "host" || st["code"] != code || p.node != a.ID() {
			t.Fatalf("%s joined %v on %s", p.id, st, p.node)
		}
		if len(p.moves) != 1 || p.moves[0]["reason"] != room.ReasonLobby || p.moves[0]["node"] != a.ID() {
			t.Fatalf("%s redirects %v", p.id, p.moves)
		}
		members = append(members, p)
	}
	if st, _ := a.lm.Lobby(code); len(st.Members) != 3 || st.Host != "host" {
		t.Fatalf("lobby on %s: %+v", a.ID(), st)
	}

	host.send(lobby.MsgLeave, nil)
	host.next(lobby.TypeLeft)
	for _, p := range members {
		for {
			st := p.next(lobby.TypeState)
			if len(st["members"].([]any)) == 2 {
				if st["host"] != members[0].id {
					t.Fatalf("after the host left: %v, want %s as host", st, members[0].id)
				}
				break
			}
		}
	}
	members[0].send(lobby.MsgStart, nil)
	r0, r1 := members[0].next("room"), members[1].next("room")
	if r0["room"] != r1["room"] || r0["kind"] != "lobby" {
		t.Fatalf("rooms %v and %v", r0, r1)
	}

	// A code nobody holds is refused where it is typed.
	p := connect(t, b.url, b.url, b.host, "dan")
	p.send(lobby.MsgJoin, map[string]string{"code": "ZZZZZ"})
	if e := p.next(lobby.TypeError); e["error"] != lobby.ErrNoLobby.Error() || p.node != b.ID() {
		t.Fatalf("unknown code: %v on %s", e, p.node)
	}
}
