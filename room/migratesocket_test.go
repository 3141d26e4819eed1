package room_test

import (
	"context"
	"testing"

	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/room"
)

// A drain moves a room over real HTTP to the other server, and its
// connected players are redirected there (reason migrate), where they are
// welcomed back into the same room.
func TestMovedRoomsPlayersFollow(t *testing.T) {
	servers := hosttest.StartServers(t, hosttest.Sockets{Servers: 2, Migrate: true})
	a, b := servers[0], servers[1]
	if _, err := a.Host.OpenRoom(t.Context(), room.Info{ID: "m", Players: []string{"p1", "p2"}}); err != nil {
		t.Fatal(err)
	}
	conns := map[string]*playtest.Conn{}
	for _, id := range []string{"p1", "p2"} {
		c := playtest.DialPlayer(t, a.URL, a.Host.Tickets(), id, "")
		if w := c.Welcome("new"); w["room"] != "m" {
			t.Fatalf("%s welcomed into %v, want m", id, w["room"])
		}
		conns[id] = c
	}
	drained := make(chan error, 1)
	go func() { drained <- a.Drain(context.Background()) }()
	for id, c := range conns {
		rd := c.Next("redirect")
		if rd["reason"] != room.ReasonMigrate || rd["node"] != b.ID() {
			t.Fatalf("%s redirected %v, want to %s with reason migrate", id, rd, b.ID())
		}
		// Through the load balancer, which sends nobody to a draining server.
		back := playtest.DialPlayer(t, b.URL, a.Host.Tickets(), id, "node="+b.ID())
		if w := back.Welcome("rejoin"); w["room"] != "m" || w["node"] != b.ID() {
			t.Errorf("%s welcomed on %v into %v, want on %s into m", id, w["node"], w["room"], b.ID())
		}
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	testrun.WaitFor(t, "the players are back in m on b", func() bool {
		return b.Host.RoomOf("p1") == "m" && b.Host.RoomOf("p2") == "m" && b.Host.Connected("p1") && b.Host.Connected("p2")
	})
	if st := a.Host.Stats(); st.Moves.Moved != 1 || st.Redirects[room.ReasonMigrate] != 2 {
		t.Errorf("a moved %d rooms and redirected %d players for migrate, want 1 and 2", st.Moves.Moved, st.Redirects[room.ReasonMigrate])
	}
	// The drain's last part sends away the players in no room: not those
	// whose redirect after their room is under way.
	if n := a.Host.Stats().Redirects[room.ReasonDrain]; n != 0 {
		t.Errorf("a redirected %d players of the moved room again, reason drain", n)
	}
}
