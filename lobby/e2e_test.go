package lobby_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/fleettest"
	"github.com/muster-gg/muster/internal/hosttest"
	"github.com/muster-gg/muster/lobby"
	"github.com/muster-gg/muster/relay"
	"github.com/muster-gg/muster/room"
)

// This file runs servers with real WebSockets on loopback, each behind its
// relay, on one fleet with a short heartbeat: the end-to-end path of the
// module-level tests.

var quiet = slog.New(slog.DiscardHandler)

// game and sim are the test game of the socket tests and the examples.
type (
	game = hosttest.Game
	sim  = hosttest.Sim
)

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
		h, err := room.New[*sim, int, string](&game{MatchLen: o.matchLen}, room.Config{Secret: "shared", MoveCooldown: cooldown, Limits: room.Limits{Connects: 1 << 20}}, quiet)
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
	hosttest.WaitFor(tb, "servers see each other", func() bool {
		for _, s := range out {
			if len(s.Nodes()) != o.servers {
				return false
			}
		}
		return true
	})
	return out
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

// A code made on A and typed on B and C lands all three on A through the
// relay, with the right host; the host leaves: a new host; the new host
// starts the match.
func TestSocketCodeEverywhere(t *testing.T) {
	servers := startServers(t, setup{servers: 3})
	a, b, c := servers[0], servers[1], servers[2]
	host := hosttest.Connect(t, a.url, a.url, a.host.Tickets(), "host")
	host.Send(lobby.MsgCreate, nil)
	st := host.Next(lobby.TypeState)
	code := st["code"].(string)
	if st["host"] != "host" || st["node"] != a.ID() || len(code) != 5 {
		t.Fatalf("created %v", st)
	}
	var members []*hosttest.Player
	for _, s := range []*server{b, c} {
		p := hosttest.Connect(t, s.url, s.url, s.host.Tickets(), "on-"+s.ID())
		time.Sleep(cooldown) // a join typed sooner waits for it
		p.Send(lobby.MsgJoin, map[string]string{"code": strings.ToLower(code)})
		st := p.Next(lobby.TypeState)
		if st["node"] != a.ID() || st["host"] != "host" || st["code"] != code || p.Node != a.ID() {
			t.Fatalf("%s joined %v on %s", p.ID, st, p.Node)
		}
		if len(p.Moves) != 1 || p.Moves[0]["reason"] != room.ReasonLobby || p.Moves[0]["node"] != a.ID() {
			t.Fatalf("%s redirects %v", p.ID, p.Moves)
		}
		members = append(members, p)
	}
	if st, _ := a.lm.Lobby(code); len(st.Members) != 3 || st.Host != "host" {
		t.Fatalf("lobby on %s: %+v", a.ID(), st)
	}

	host.Send(lobby.MsgLeave, nil)
	host.Next(lobby.TypeLeft)
	for _, p := range members {
		for {
			st := p.Next(lobby.TypeState)
			if len(st["members"].([]any)) == 2 {
				if st["host"] != members[0].ID {
					t.Fatalf("after the host left: %v, want %s as host", st, members[0].ID)
				}
				break
			}
		}
	}
	members[0].Send(lobby.MsgStart, nil)
	r0, r1 := members[0].Next("room"), members[1].Next("room")
	if r0["room"] != r1["room"] || r0["kind"] != "lobby" {
		t.Fatalf("rooms %v and %v", r0, r1)
	}

	// A code nobody holds is refused where it is typed.
	p := hosttest.Connect(t, b.url, b.url, b.host.Tickets(), "dan")
	p.Send(lobby.MsgJoin, map[string]string{"code": "ZZZZZ"})
	if e := p.Next(lobby.TypeError); e["error"] != lobby.ErrNoLobby.Error() || p.Node != b.ID() {
		t.Fatalf("unknown code: %v on %s", e, p.Node)
	}
}
