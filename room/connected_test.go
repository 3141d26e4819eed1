package room

import (
	"testing"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/playtest"
)

// A player whose connection the host is closing (a redirect away, a cut)
// no longer counts as connected here, even while the close handshake
// waits for a client that does not read: the "players" a server publishes
// count a moved player on the server it went to, not on both.
func TestClosingClientIsNotCountedConnected(t *testing.T) {
	h := newHost(t, newCounter(), Config{})
	runHost(t, h)
	srv := newServer(t, h)
	c := playtest.DialPlayer(t, srv.URL, h.Tickets(), "p1", "")
	c.Welcome("new")
	if n := h.Stats().Connected; n != 1 {
		t.Fatalf("connected %d, want 1", n)
	}
	h.mu.Lock()
	cl := h.clients["p1"]
	h.mu.Unlock()
	cl.Close(websocket.StatusNormalClosure, "redirect") // as a redirect does; p1 reads nothing more
	if n := h.Stats().Connected; n != 0 {
		t.Fatalf("connected %d while its connection is being closed, want 0", n)
	}
}
