package lobby_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/lobby"
	"github.com/muster-gg/muster/room"
)

// This file runs servers with real WebSockets on loopback, each behind its
// relay, on one fleet with a short heartbeat: the end-to-end path of the
// module-level tests.

var quiet = slog.New(slog.DiscardHandler)

type server struct {
	*hosttest.Server
	lm *lobby.Module
}

type setup struct {
	servers  int
	matchLen uint64
}

// cooldown is the hosts' move cooldown.
const cooldown = hosttest.Cooldown

// startServers runs the servers, each with a lobby module, until the test
// ends and waits until each sees all.
func startServers(tb testing.TB, o setup) []*server {
	tb.Helper()
	out := make([]*server, o.servers)
	servers := hosttest.StartServers(tb, hosttest.Sockets{Servers: o.servers, MatchLen: o.matchLen, Modules: func(i int) []room.Module {
		lm, err := lobby.New(lobby.Config{Tick: 20 * time.Millisecond})
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = &server{lm: lm}
		return []room.Module{lm}
	}})
	for i, s := range servers {
		out[i].Server = s
	}
	return out
}

// A code made on A and typed on B and C lands all three on A through the
// relay, with the right host; the host leaves: a new host; the new host
// starts the match.
func TestSocketCodeEverywhere(t *testing.T) {
	servers := startServers(t, setup{servers: 3})
	a, b, c := servers[0], servers[1], servers[2]
	host := a.Connect(t, "host")
	host.Send(lobby.MsgCreate, nil)
	st := host.Next(lobby.TypeState)
	code := st["code"].(string)
	if st["host"] != "host" || st["node"] != a.ID() || len(code) != 5 {
		t.Fatalf("created %v", st)
	}
	var members []*playtest.Player
	for _, s := range []*server{b, c} {
		p := s.Connect(t, "on-"+s.ID())
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
	p := b.Connect(t, "dan")
	p.Send(lobby.MsgJoin, map[string]string{"code": "ZZZZZ"})
	if e := p.Next(lobby.TypeError); e["error"] != lobby.ErrNoLobby.Error() || p.Node != b.ID() {
		t.Fatalf("unknown code: %v on %s", e, p.Node)
	}
}
