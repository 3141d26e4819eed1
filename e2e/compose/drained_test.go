package compose

import (
	"testing"
	"time"

	"github.com/muster-gg/muster/examples/duel/bot"
)

// TestDrainedWait reads the waiter's reports of two runs of
// TestComposeScale. In the first, the duel queue lived on a removed
// server and its drain moved the waiter with its time. In the second, the
// waiter's first server was one to be removed, but the queue sent it on to
// its gathering server, a kept one, before the scale-down: nothing was
// carried, and the time it arrived with there is no drain's to check (the
// test once read the first server and failed, "the waiter arrived with 0s
// waited, want at least 10ms").
func TestDrainedWait(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	gone := []string{"a", "b"}

	moved := bot.Report{
		Redirects: []bot.Redirect{{At: at(232), From: "a", To: "c", Reason: "drain"}},
		Waits: []bot.Wait{
			{At: at(9), Node: "a", Playlist: "duel"},
			{At: at(290), Node: "c", Playlist: "duel", Waited: 210 * time.Millisecond},
		},
	}
	d, ok := drainedWait(moved, gone)
	want := drained{from: "a", to: "c", had: 223 * time.Millisecond, arrived: 210 * time.Millisecond}
	if !ok || d != want {
		t.Errorf("drain moved the place: drainedWait = %+v, %v; want %+v, true", d, ok, want)
	}

	routed := bot.Report{
		Redirects: []bot.Redirect{{At: at(231), From: "a", To: "c", Reason: "queue"}},
		Waits: []bot.Wait{
			{At: at(204), Node: "a", Playlist: "duel"},
			{At: at(833), Node: "c", Playlist: "duel"},
		},
	}
	if d, ok := drainedWait(routed, gone); ok {
		t.Errorf("the queue moved the place before the drain: drainedWait = %+v, true; want false", d)
	}

	// A drain redirect that crossed the queue request: the bot never
	// waited on the draining server, so it had nothing to carry.
	crossed := bot.Report{
		Redirects: []bot.Redirect{{At: at(100), From: "b", To: "c", Reason: "drain"}},
		Waits:     []bot.Wait{{At: at(300), Node: "c", Playlist: "duel"}},
	}
	if d, ok := drainedWait(crossed, gone); ok {
		t.Errorf("no wait on the draining server: drainedWait = %+v, true; want false", d)
	}
}
