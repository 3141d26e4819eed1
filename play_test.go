package muster_test

import (
	"testing"

	"github.com/muster-gg/muster/internal/testkit/playtest"
)

// The players' side of these tests is internal/testkit/playtest: a
// WebSocket to a server's /play.

// welcome says hello on c as a new player and returns the welcome; it
// fails the test unless the welcome is for player.
func welcome(t *testing.T, c *playtest.Conn, player string) map[string]any {
	t.Helper()
	w := c.Welcome("new")
	if w["player"] != player {
		t.Fatalf("after hello: %v, want a welcome for %s", w, player)
	}
	return w
}
