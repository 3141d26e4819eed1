package relay

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// capped is an OpenLimit of max connections per address, as the room
// host's limits.open.
type capped struct {
	max int

	mu   sync.Mutex
	held map[string]int
}

func (c *capped) HoldOpen(ip string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[ip] >= c.max {
		return false
	}
	if c.held == nil {
		c.held = make(map[string]int)
	}
	c.held[ip]++
	return true
}

func (c *capped) ReleaseOpen(ip string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held[ip]--
}

func (c *capped) of(ip string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held[ip]
}

// TestRelayHoldsOpenConnections: the relay holds each connection it
// relays in its OpenLimit, by the client's address, until the session
// ends, and answers 429 before any dial when the address holds its cap; a
// connection served here, after a failed dial too, is not held by the
// relay (its handler holds it), nor one the node refused (#39.1).
func TestRelayHoldsOpenConnections(t *testing.T) {
	t.Parallel()
	lim := &capped{max: 2}
	dir := &dirMap{}
	a := startNode(t, "a", dir, withDialTimeout(5*time.Second), func(n *nodeSettings) {
		n.setup = func(rl *Relay) { rl.LimitOpen(lim) }
	})
	b := startNode(t, "b", dir)
	dir.set("dead", deadAddr(t))
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusForbidden)
	}))
	t.Cleanup(refusing.Close)
	dir.set("refusing", refusing.Listener.Addr().String())
	const ip = "127.0.0.1"

	// Not relayed: the relay holds nothing for them, and lets go of what
	// it held for a dial that failed before the connection is served here.
	local, _ := dial(t, a, "/ws", dialOpts{})
	defer local.CloseNow()
	fellBack, served := dial(t, a, "/ws?node=dead", dialOpts{})
	defer fellBack.CloseNow()
	if served != "a" {
		t.Fatalf("a connection to a dead node served by %q, want a", served)
	}
	if got := lim.of(ip); got != 0 {
		t.Fatalf("%d connections held with one served here and one fallen back, want none", got)
	}

	first := dialRelayed(t, a, b, dialOpts{})
	dialRelayed(t, a, b, dialOpts{})
	if got := lim.of(ip); got != 2 {
		t.Fatalf("%d connections held for two relayed, want 2", got)
	}
	seenByB := len(b.seen)
	resp, _ := upgrade(t, a, "/ws?node=b", nil)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a third relayed connection at a cap of 2: %d, want 429", resp.StatusCode)
	}
	if got := a.relay.Stats().OverOpen; got != 1 {
		t.Errorf("Stats.OverOpen %d, want 1", got)
	}
	if len(b.seen) != seenByB {
		t.Error("b was dialled for a client over its cap")
	}

	first.Close(websocket.StatusNormalClosure, "")
	testrun.WaitFor(t, "the ended session let go", func() bool { return lim.of(ip) == 1 })
	resp, _ = upgrade(t, a, "/ws?node=refusing", nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a node's refusal passed on as %d, want 403", resp.StatusCode)
	}
	if got := lim.of(ip); got != 1 {
		t.Fatalf("%d connections held after a node refused one, want 1", got)
	}
	dialRelayed(t, a, b, dialOpts{})
}
