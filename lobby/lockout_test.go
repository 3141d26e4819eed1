package lobby_test

import (
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/lobby"
	"github.com/muster-gg/muster/room"
)

// Wrong codes are counted once for the fleet per client address: tries
// spread over two servers lock the address out on both, even for a code
// that exists (#16.5).
func TestWrongCodesLockOutAcrossFleet(t *testing.T) {
	servers := hosttest.StartServers(t, hosttest.Sockets{Servers: 2, Modules: func(int) []room.Module {
		lm, err := lobby.New(lobby.Config{Tick: 20 * time.Millisecond, CodeFailures: 3})
		if err != nil {
			t.Fatal(err)
		}
		return []room.Module{lm}
	}})
	a, b := servers[0], servers[1]
	host := a.Connect(t, "host")
	host.Send(lobby.MsgCreate, nil)
	code := host.Next(lobby.TypeState)["code"].(string)

	g1 := a.Connect(t, "g1")
	for _, wrong := range []string{"!!", "?"} {
		g1.Send(lobby.MsgJoin, map[string]string{"code": wrong})
		g1.Next(lobby.TypeError)
	}
	g2 := b.Connect(t, "g2")
	g2.Send(lobby.MsgJoin, map[string]string{"code": "#"})
	g2.Next(lobby.TypeError)

	g3 := b.Connect(t, "g3")
	g3.Send(lobby.MsgJoin, map[string]string{"code": code})
	if e := g3.Next(lobby.TypeError); !strings.Contains(e["error"].(string), lobby.ErrLocked.Error()) {
		t.Fatalf("join after 3 wrong codes from the address: %v, want %q", e, lobby.ErrLocked)
	}
}
