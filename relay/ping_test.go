package relay

import (
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestNodePingLiveClient: the node's ping is answered, and the relay's
// probe of the client (answered by a client that keeps reading) leaves the
// connection alone.
func TestNodePingLiveClient(t *testing.T) {
	t.Parallel()
	c, _, _ := relayed(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	for i := range 3 {
		if err := c.Write(ctx, websocket.MessageText, []byte("ping")); err != nil {
			t.Fatal(err)
		}
		if _, data, err := c.Read(ctx); err != nil || string(data) != "ping ok" {
			t.Fatalf("ping %d: got %q, %v; want ping ok", i, data, err)
		}
	}
	if err := c.Write(ctx, websocket.MessageText, []byte("still open")); err != nil {
		t.Fatal(err)
	}
	if _, data, err := c.Read(ctx); err != nil || string(data) != "still open" {
		t.Fatalf("echo after pings: %q, %v", data, err)
	}
}

// TestNodePingDeadClient: a client that no longer answers pings (here: one
// that stopped reading) is reported to the node as gone when the node
// pings, as it would be without the relay.
func TestNodePingDeadClient(t *testing.T) {
	t.Parallel()
	c, _, b := relayed(t, withProbeTimeout(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	// The client reads nothing from now on, so it never answers a ping.
	if got := recv(t, b.ends, "end of b's connection"); got.Code != websocket.StatusGoingAway {
		t.Errorf("b saw close %d %q, want 1001", got.Code, got.Reason)
	}
	c.CloseNow()
}
