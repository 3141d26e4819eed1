//go:build linux

package room

import (
	"testing"
	"time"

	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/internal/wsframe"
)

// TestBlindPongsDoNotAnswerPings: a client that reads nothing and sends
// pongs of its own (not the ping's payload) has not answered the host's
// ping: it is closed with "no answer to ping", as on the portable path,
// whose pings carry a payload of their own (a count) that the pong must
// echo. The loop's
// pings once had no payload and any pong answered them: such a client was
// kept as long as it sent pongs.
func TestBlindPongsDoNotAnswerPings(t *testing.T) {
	skipPortable(t)
	h, srv := startHost(t, Config{PingInterval: 50 * time.Millisecond})
	rc := helloOnLoop(t, h, srv.URL, "p1", "new")
	c, _ := h.Client("p1")
	lc := c.lc.Load()
	var last time.Time // when the ping the client last "answered" went out
	for round := 0; ; round++ {
		closing := false
		testrun.WaitFor(t, "another ping, or the close", func() bool {
			lc.mu.Lock()
			defer lc.mu.Unlock()
			closing = lc.closing
			return closing || lc.pingOut && lc.pingAt != last
		})
		if closing {
			break
		}
		if round == 3 {
			t.Fatalf("the client answered %d pings with pongs of its own, reading nothing, and the host kept it", round)
		}
		lc.mu.Lock()
		last = lc.pingAt
		lc.mu.Unlock()
		rc.write(t, wsframe.OpPong, []byte("blind"))
	}
	c.mu.Lock()
	code, reason := c.closeCode, c.closeReason
	c.mu.Unlock()
	if code != StatusGoingAway || reason != "no answer to ping" {
		t.Fatalf("closed with %d %q, want %d %q", code, reason, StatusGoingAway, "no answer to ping")
	}
}
