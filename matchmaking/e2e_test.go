package matchmaking_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/fleettest"
	"github.com/muster-gg/muster/lobby"
	"github.com/muster-gg/muster/matchmaking"
	"github.com/muster-gg/muster/relay"
	"github.com/muster-gg/muster/room"
)

// This file runs servers with real WebSockets on loopback, each behind its
// relay, on one fleet with a short heartbeat: the end-to-end path of the
// module-level tests, and the N4 latency benchmark.

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
	mm   *matchmaking.Module[*sim, int, string]
	lm   *lobby.Module[*sim, int, string]
	url  string
}

type setup struct {
	servers   int
	playlists []matchmaking.Playlist
	tick      time.Duration // matchmaking.Config.Tick
	matchLen  uint64
	cooldown  time.Duration // room.Config.MoveCooldown; default the const
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
	if len(o.playlists) == 0 {
		o.playlists = []matchmaking.Playlist{{Name: "duel"}}
	}
	if o.cooldown == 0 {
		o.cooldown = cooldown
	}
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
	logger := slog.New(slog.NewTextHandler(tbWriter{tb}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	for i, s := range c.Servers {
		h, err := room.New[*sim, int, string](game{o.matchLen}, room.Config{Secret: "shared", MoveCooldown: o.cooldown, Limits: room.Limits{Connects: 1 << 20}}, logger.With("node_id", s.ID()))
		if err != nil {
			tb.Fatal(err)
		}
		mm, err := matchmaking.New[*sim, int, string](matchmaking.Config{Tick: o.tick}, o.playlists...)
		if err != nil {
			tb.Fatal(err)
		}
		lm, err := lobby.New[*sim, int, string](lobby.Config{Tick: 20 * time.Millisecond})
		if err != nil {
			tb.Fatal(err)
		}
		for _, m := range []room.Module[*sim, int, string]{mm, lm} {
			if err := h.Use(m); err != nil {
				tb.Fatal(err)
			}
		}
		h.UseServer(s.Fleet)
		h.UseFleet(s.Fleet)
		rl, err := relay.New(relay.Config{NodeID: s.ID(), Secret: "shared relay secret, long enough", DialTimeout: 10 * time.Second}, s.Fleet, logger)
		if err != nil {
			tb.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/play", h.Handler())
		https[i].Config.Handler = rl.Middleware(mux)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, run := range []func(context.Context) error{h.Run, mm.Run, lm.Run} {
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
		out = append(out, &server{Server: s, host: h, mm: mm, lm: lm, url: https[i].URL})
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

// tbWriter writes the servers' warnings to the test's log, shown when it
// fails.
type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimSpace(string(p)))
	return len(p), nil
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

// A player queued on a server where duel does not gather is handed over
// with its waited time and redirected through the relay, and matched with
// a player of the gather server.
func TestSocketQueueAcrossRedirect(t *testing.T) {
	servers := startServers(t, setup{servers: 3})
	g := byID(servers, matchmaking.GatherOrder("duel", servers[0].Nodes())[0].ID)
	var x *server
	for _, s := range servers {
		if s != g {
			x = s
			break
		}
	}
	a := connect(t, x.url, x.url, x.host, "alice")
	a.send(matchmaking.MsgQueue, map[string]any{"playlist": "duel", "rating": 1200})
	first := a.next(matchmaking.TypeWaiting)
	if first["node"] != x.ID() {
		t.Fatalf("alice waits on %v, want %s first", first["node"], x.ID())
	}
	// A fresh connection is moved at once (the cooldown is for players
	// who were moved); the time it waited on x comes along.
	arrived := a.next(matchmaking.TypeWaiting) // after the redirect
	if arrived["node"] != g.ID() || arrived["waited_ms"].(float64) < first["waited_ms"].(float64) {
		t.Fatalf("alice arrived: %v after %v; want to wait on %s with the time waited on %s", arrived, first, g.ID(), x.ID())
	}
	if len(a.moves) != 1 || a.moves[0]["node"] != g.ID() || a.moves[0]["reason"] != room.ReasonQueue {
		t.Fatalf("alice's redirects %v", a.moves)
	}

	b := connect(t, g.url, g.url, g.host, "bob")
	b.send(matchmaking.MsgQueue, map[string]any{"playlist": "duel"})
	ra, rb := a.next("room"), b.next("room")
	if ra["room"] != rb["room"] || ra["kind"] != "duel" || g.host.RoomOf("alice") != ra["room"] {
		t.Fatalf("alice in %v, bob in %v; want one duel room on %s", ra, rb, g.ID())
	}

	// Refusals are packets, not closed connections.
	c := connect(t, g.url, g.url, g.host, "carol")
	c.send(matchmaking.MsgQueue, map[string]any{"playlist": "nope"})
	if e := c.next(matchmaking.TypeError); e["error"] != matchmaking.ErrUnknownPlaylist.Error() {
		t.Fatalf("unknown playlist: %v", e)
	}
	c.send(matchmaking.MsgQueue, map[string]any{"playlist": "duel"})
	c.next(matchmaking.TypeWaiting)
	c.send(matchmaking.MsgUnqueue, nil)
	if l := c.next(matchmaking.TypeLeft); l["playlist"] != "duel" || g.mm.Waiting("duel") != 0 {
		t.Fatalf("unqueue: %v, %d waiting", l, g.mm.Waiting("duel"))
	}
}

// Drain of the gather server with 50 players waiting and 5 lobbies open:
// all 50 and all 5 arrive elsewhere, with their waited time and host
// roles, and its running rooms finish.
func TestSocketDrainLosesNobody(t *testing.T) {
	servers := startServers(t, setup{
		servers:   3,
		playlists: []matchmaking.Playlist{{Name: "royale", Teams: 2, TeamSize: 32}},
		matchLen:  60, // one second
	})
	g := byID(servers, matchmaking.GatherOrder("royale", servers[0].Nodes())[0].ID)
	var lb *server // where the load balancer sends reconnections
	for _, s := range servers {
		if s != g {
			lb = s
			break
		}
	}

	type queued struct {
		p      *player
		waited time.Duration // when the drain began
	}
	var waiting []queued
	for i := range 50 {
		p := connect(t, g.url, lb.url, g.host, fmt.Sprintf("w%02d", i))
		p.send(matchmaking.MsgQueue, map[string]any{"playlist": "royale"})
		p.next(matchmaking.TypeWaiting)
		waiting = append(waiting, queued{p: p})
	}
	type lobbyWant struct {
		code    string
		host    string
		members []*player
	}
	var lobbies []lobbyWant
	for i := range 5 {
		var members []*player
		for j := range 3 {
			p := connect(t, g.url, lb.url, g.host, fmt.Sprintf("l%d-%d", i, j))
			members = append(members, p)
		}
		members[0].send(lobby.MsgCreate, nil)
		code := members[0].next(lobby.TypeState)["code"].(string)
		for _, p := range members[1:] {
			p.send(lobby.MsgJoin, map[string]string{"code": code})
			p.next(lobby.TypeState)
		}
		lobbies = append(lobbies, lobbyWant{code, members[0].id, members})
	}
	// One lobby is playing: its room runs on g and finishes during the drain.
	lobbies[0].members[0].send(lobby.MsgStart, nil)
	for _, p := range lobbies[0].members {
		p.next("room")
	}
	if g.host.Rooms() != 1 || g.mm.Waiting("royale") != 50 || g.lm.Lobbies() != 5 {
		t.Fatalf("before the drain: %d rooms, %d waiting, %d lobbies", g.host.Rooms(), g.mm.Waiting("royale"), g.lm.Lobbies())
	}

	time.Sleep(cooldown) // everybody may be moved
	for i := range waiting {
		waiting[i].waited, _ = g.mm.Waited(waiting[i].p.id)
	}
	drained := make(chan error, 1)
	go func() { drained <- g.Drain(context.Background()) }()

	var wg sync.WaitGroup
	for _, q := range waiting {
		wg.Go(func() {
			w, err := q.p.await(matchmaking.TypeWaiting)
			if err != nil {
				t.Errorf("%v (redirects %v; drained %s, reconnecting through %s)", err, q.p.moves, g.ID(), lb.ID())
				return
			}
			before := q.waited.Milliseconds()
			switch {
			case w["node"] == g.ID() || q.p.node == g.ID():
				t.Errorf("%s still waits on the draining server", q.p.id)
			case int64(w["waited_ms"].(float64)) < before:
				t.Errorf("%s arrived with %v ms waited; it had waited %d ms when the drain began", q.p.id, w["waited_ms"], before)
			case len(q.p.moves) != 1 || q.p.moves[0]["reason"] != room.ReasonDrain:
				t.Errorf("%s redirects %v, want one drain", q.p.id, q.p.moves)
			}
		})
	}
	for _, l := range lobbies {
		for _, p := range l.members {
			wg.Go(func() {
				for {
					st, err := p.await(lobby.TypeState)
					if err != nil {
						t.Error(err)
						return
					}
					if st["node"] == g.ID() {
						continue // a state sent before the lobby moved
					}
					if st["code"] != l.code || st["host"] != l.host || len(st["members"].([]any)) != 3 {
						t.Errorf("%s arrived in %v, want lobby %s hosted by %s with 3 members", p.id, st, l.code, l.host)
					}
					return
				}
			})
		}
	}
	wg.Wait()
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	if g.host.Rooms() != 0 || g.mm.Waiting("royale") != 0 || g.lm.Lobbies() != 0 {
		t.Fatalf("after the drain: %d rooms, %d waiting, %d lobbies on %s", g.host.Rooms(), g.mm.Waiting("royale"), g.lm.Lobbies(), g.ID())
	}
	total := 0
	for _, s := range servers {
		if s != g {
			total += s.mm.Waiting("royale")
		}
	}
	if total != 50 {
		for _, q := range waiting {
			var at []string
			for _, s := range servers {
				if w, ok := s.mm.Waited(q.p.id); ok {
					at = append(at, fmt.Sprintf("%s (%v)", s.ID(), w))
				}
			}
			t.Logf("%s: waits on %v; redirects %v", q.p.id, at, q.p.moves)
		}
		t.Fatalf("%d players wait elsewhere after the drain, want 50 (drained %s)", total, g.ID())
	}
	for _, l := range lobbies {
		n, err := lb.Locate(context.Background(), fleet.KindLobby, l.code)
		if err != nil || n.ID == g.ID() {
			t.Fatalf("lobby %s locates at %q (%v)", l.code, n.ID, err)
		}
		if st, ok := byID(servers, n.ID).lm.Lobby(l.code); !ok || st.Host != l.host {
			t.Fatalf("lobby %s on %s: %+v", l.code, n.ID, st)
		}
	}
}

// BenchmarkSocketEnqueueToRoom measures N4's enqueue-to-room time across a
// redirect: a player connected to a server where duel does not gather
// sends "queue"; the server hands its place to the gather server and
// redirects it; the player reconnects through the relay of the server it
// was on and is matched there with a partner who waits. The time runs from
// the queue message to the room packet. The move cooldown is 1 ms here:
// with the default 3 s, a player who queues within 3 s of connecting
// waits for it before it is redirected.
func BenchmarkSocketEnqueueToRoom(b *testing.B) {
	for _, tick := range []time.Duration{100 * time.Millisecond, 10 * time.Millisecond} {
		b.Run("tick="+tick.String(), func(b *testing.B) {
			servers := startServers(b, setup{servers: 2, tick: tick, matchLen: 1, cooldown: time.Millisecond})
			g := byID(servers, matchmaking.GatherOrder("duel", servers[0].Nodes())[0].ID)
			x := servers[0]
			if x == g {
				x = servers[1]
			}
			var lat []time.Duration
			i := 0
			for b.Loop() {
				i++
				partner := connect(b, g.url, g.url, g.host, fmt.Sprintf("b%d", i))
				partner.send(matchmaking.MsgQueue, map[string]any{"playlist": "duel"})
				partner.next(matchmaking.TypeWaiting)
				p := connect(b, x.url, x.url, x.host, fmt.Sprintf("a%d", i))
				// Past the move cooldown, at any phase of the servers' ticks.
				time.Sleep(2*time.Millisecond + rand.N(tick))
				start := time.Now()
				p.send(matchmaking.MsgQueue, map[string]any{"playlist": "duel"})
				room := p.next("room")
				lat = append(lat, time.Since(start))
				if len(p.moves) != 1 || partner.next("room")["room"] != room["room"] {
					b.Fatalf("moves %v, room %v", p.moves, room)
				}
				p.conn.CloseNow()
				partner.conn.CloseNow()
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
