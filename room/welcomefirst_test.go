package room_test

import (
	"testing"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/room"
)

// A player back in its seat hears its welcome before its room's states,
// however long its hello's connection claim waits on the backplane (a
// loaded CI run: a rejoining bot got a state before its welcome, since the
// seat took the connection before the claim and the welcome came after).
func TestWelcomeBeforeStatesOnRejoin(t *testing.T) {
	a := hosttest.StartServers(t, hosttest.Sockets{Servers: 1, States: true, Modules: func(int) []room.Module { return nil }})[0]
	if _, err := a.Host.OpenRoom(t.Context(), room.Info{ID: "m", Players: []string{"p", "q"}}); err != nil {
		t.Fatal(err)
	}
	q := connectAs(t, a, "q")
	p := connectAs(t, a, "p")
	p.Next("state")
	p.Close(websocket.StatusNormalClosure, "away")
	testrun.WaitFor(t, "p away", func() bool { return !a.Host.Connected("p") })

	waiting, release := a.Backplane.Hold("Claim")
	defer release()
	back := playtest.DialPlayer(t, a.URL, a.Host.Tickets(), "p", "")
	back.Hello("rejoin")
	testrun.WaitFor(t, "p's connection claim waits", func() bool { return waiting() > 0 })
	for range 3 { // the room steps on meanwhile
		q.Next("state")
	}
	release()
	if first, err := back.Receive(); err != nil || first["type"] != "welcome" {
		t.Fatalf("first packet after a rejoin: %v (%v), want the welcome", first, err)
	}
}
