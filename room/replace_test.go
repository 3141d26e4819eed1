package room_test

import (
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/room"
)

// connectAs connects player id to s as a new player and waits for its
// welcome, without following redirects.
func connectAs(t *testing.T, s *hosttest.Server, id string) *playtest.Conn {
	t.Helper()
	c := playtest.DialPlayer(t, s.URL, s.Host.Tickets(), id, "")
	c.Welcome("new")
	return c
}

// closedWith reads c until it ends, on a goroutine of its own, and sends
// its close code.
func closedWith(c *playtest.Conn) <-chan websocket.StatusCode {
	code := make(chan websocket.StatusCode, 1)
	go func() {
		for {
			if _, err := c.Receive(); err != nil {
				code <- websocket.CloseStatus(err)
				return
			}
		}
	}()
	return code
}

// wantReplaced waits for c's close code and fails unless it is 4004; it
// returns how long after since the close came.
func wantReplaced(t *testing.T, code <-chan websocket.StatusCode, since time.Time) time.Duration {
	t.Helper()
	got := <-code // Receive gives up after playtest.Timeout
	took := time.Since(since)
	if got != room.StatusReplaced {
		t.Fatalf("the older connection ended with %d after %v, want %d (replaced)", got, took, room.StatusReplaced)
	}
	return took
}

// startTwo runs two servers on one fleet, with no module.
func startTwo(t *testing.T) []*hosttest.Server {
	t.Helper()
	return hosttest.StartServers(t, hosttest.Sockets{Servers: 2, Modules: func(int) []room.Module { return nil }})
}

// A player connected to A connects again to B: A's connection is closed
// with 4004 at A's next heartbeat, and B's stays. Connected again to A,
// B's is closed.
func TestNewerConnectionOnAnotherServerReplaces(t *testing.T) {
	servers := startTwo(t)
	a, b := servers[0], servers[1]
	onA := connectAs(t, a, "p")
	endA := closedWith(onA)
	onB := connectAs(t, b, "p")
	welcomed := time.Now()
	took := wantReplaced(t, endA, welcomed)
	t.Logf("closed on A %v after the welcome on B (heartbeat %v)", took, a.Config().Heartbeat)
	if !b.Host.Connected("p") {
		t.Fatal("the newer connection on B is gone")
	}
	testrun.WaitFor(t, "A forgets the player", func() bool { return !a.Host.Connected("p") })

	endB := closedWith(onB)
	connectAs(t, a, "p")
	wantReplaced(t, endB, time.Now())
	if !a.Host.Connected("p") {
		t.Fatal("the newest connection, on A, is gone")
	}
}

// A claim on the player's connection by a node id that is no live server
// (forged, or of a server long gone) closes nothing: A takes it back at
// its next heartbeat and the player stays.
func TestConnectionClaimOfUnknownNodeReplacesNothing(t *testing.T) {
	servers := startTwo(t)
	a := servers[0]
	onA := connectAs(t, a, "p")
	key := backplane.Key{Kind: fleet.KindConn, ID: "p"}
	if err := a.Backplane.Claim(context.Background(), "ghost", key); err != nil {
		t.Fatal(err)
	}
	testrun.WaitFor(t, "A claims the connection back", func() bool {
		owner, err := a.Backplane.Locate(context.Background(), key)
		return err == nil && owner == a.ID()
	})
	if !a.Host.Connected("p") {
		t.Fatal("the player was dropped for a claim of an unknown node")
	}
	onA.Send("nop", nil) // an unknown type: the connection is still read
	if code := onA.CloseCode(); code != room.StatusUnknownType {
		t.Fatalf("the connection ended with %d, want %d for the unknown packet", code, room.StatusUnknownType)
	}
}

// While B cannot reach the backplane, a newer connection there leaves
// A's open (each server's own rule holds); once B reaches it again, A's
// is closed with 4004, and B's stays.
func TestNewerConnectionWhileBackplaneAway(t *testing.T) {
	servers := startTwo(t)
	a, b := servers[0], servers[1]
	onA := connectAs(t, a, "p")
	endA := closedWith(onA)
	b.Backplane.Cut(true)
	connectAs(t, b, "p") // its hello tried to claim the connection, and failed
	// A re-asserts its claim at every heartbeat: a re-assertion begun
	// after B's welcome has found nothing lost.
	beats := a.Backplane.Calls("Reassert")
	testrun.WaitFor(t, "two re-assertions of A", func() bool { return a.Backplane.Calls("Reassert") >= beats+2 })
	select {
	case code := <-endA:
		t.Fatalf("A's connection ended with %d while B could not claim it", code)
	default:
	}
	if !a.Host.Connected("p") || !b.Host.Connected("p") {
		t.Fatal("a connection was dropped while the backplane was away")
	}
	b.Backplane.Cut(false)
	wantReplaced(t, endA, time.Now())
	if !b.Host.Connected("p") {
		t.Fatal("the newer connection on B is gone")
	}
}
