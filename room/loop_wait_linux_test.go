//go:build linux

package room

import (
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// loopState reports whether h's first event loop ticks (its epoll
// instance off Go's poller), and how often it has switched.
func loopState[S, I, P any](h *Host[S, I, P]) (ticking bool, switches int) {
	h.sockets.mu.Lock()
	l := h.sockets.loops[0]
	h.sockets.mu.Unlock()
	if l == nil {
		return false, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f == nil, l.switches
}

// playOnLoop plays one round with c on a room whose steps broadcast the
// total of the inputs: an input goes in, and a state that shows it, the
// total then, comes out.
func playOnLoop(t *testing.T, c *playtest.Conn, in, total int) {
	t.Helper()
	c.Send("input", in)
	c.NextWhere("a state that shows the input", func(m map[string]any) bool {
		return m["type"] == "state" && m["total"] == float64(total)
	})
}

// tickingHost starts a host whose rooms broadcast their total every step,
// and whose event loops tick at the rates given, with room r for p1.
func tickingHost(t *testing.T, cfg Config, rates [2]float64) (*Host[*csim, int, *cplayer], *playtest.Conn) {
	t.Helper()
	g := newCounter()
	g.onStep = func(r *Room[*csim, int, *cplayer]) {
		if r.Present("p1") {
			r.Broadcast(map[string]any{"type": "state", "total": r.Sim().total})
		}
	}
	h := newHost(t, g, cfg)
	h.sockets.rates = rates // the tests skip first in a muster_portable build
	return h, playAlone(t, h)
}

// TestLoopTicksWhileBusy: a loop whose events come fast ticks, its epoll
// instance off Go's poller, and serves its players as it does from the
// poller: inputs in, states out, pings answered, the close handshake; and
// the host stops it.
func TestLoopTicksWhileBusy(t *testing.T) {
	skipPortable(t)
	// Tick from the first count on, and never stop.
	h, c := tickingHost(t, Config{PingInterval: 50 * time.Millisecond}, [2]float64{0, 0})
	testrun.WaitFor(t, "the loop ticks", func() bool { ticking, _ := loopState(h); return ticking })
	playOnLoop(t, c, 5, 5)
	// The client answers pings as it reads.
	c.NextWhere("three pings sent", func(map[string]any) bool {
		lc := loopConnOf(h, "p1")
		return lc != nil && lc.pingSeqNow() >= 3
	})
	playOnLoop(t, c, 12, 17)
	if ticking, _ := loopState(h); !ticking {
		t.Fatal("the loop stopped ticking")
	}
	if err := c.Close(websocket.StatusNormalClosure, "bye"); err != nil {
		t.Fatalf("the close handshake: %v", err)
	}
	testrun.WaitFor(t, "p1 is let go", func() bool { _, ok := h.Client("p1"); return !ok && onLoop(h) == 0 })
}

// TestLoopSwitchesBetweenPollerAndTicks: a loop goes back to Go's poller
// when its events come slowly, and ticks again when they come fast; its
// players play on across the switches.
func TestLoopSwitchesBetweenPollerAndTicks(t *testing.T) {
	skipPortable(t)
	// Every count both starts the ticks and stops them: the loop switches
	// at every rateWindow, or at every sweep (a quarter of the ping
	// interval) when nothing comes.
	h, c := tickingHost(t, Config{PingInterval: 40 * time.Millisecond}, [2]float64{0, 1e12})
	for i := 1; i <= 3; i++ {
		_, before := loopState(h)
		c.NextWhere("two more switches", func(map[string]any) bool { _, n := loopState(h); return n >= before+2 })
		playOnLoop(t, c, i, i*(i+1)/2)
	}
}

// loopConnOf returns id's connection on the event loop, or nil.
func loopConnOf[S, I, P any](h *Host[S, I, P], id string) *loopConn {
	c, _ := h.Client(id)
	if c == nil {
		return nil
	}
	return c.lc.Load()
}

// pingSeqNow returns how many pings the loop has sent the client.
func (lc *loopConn) pingSeqNow() uint64 {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.pingSeq
}
