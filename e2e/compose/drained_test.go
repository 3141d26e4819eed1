package compose

import (
	"testing"
	"time"

	"github.com/muster-gg/muster/examples/duel/bot"
)

// TestDrainedWait reads the waiter's reports of three runs of
// TestComposeScale (times in ms from its queue message).
//
//   - The duel queue lived on a removed server, and its drain moved the
//     waiter with its time (CI).
//   - The waiter's first server was one to be removed, but the queue sent
//     it on to its gathering server, a kept one, before the scale-down:
//     nothing was carried. The test once read the first server and
//     failed: "the waiter arrived with 0s waited, want at least 10ms".
//   - On a starved machine the drain's redirect came 0.86 s after the
//     server had counted the waiter's time. The test once took the
//     redirect's arrival as the hand-over and failed: "arrived with 3.035s
//     waited, want at least 3.895s less 200ms". The hand-over came after
//     the scale-down began, which bounds it without a margin.
func TestDrainedWait(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	gone := []string{"a", "b"}

	tests := []struct {
		name  string
		rep   bot.Report
		began time.Time
		ok    bool
		least time.Duration
	}{{
		name: "moved by the drain",
		rep: bot.Report{
			Redirects: []bot.Redirect{{At: at(232), From: "a", To: "c", Reason: "drain"}},
			Waits:     []bot.Wait{{At: at(9), Node: "a"}, {At: at(290), Node: "c", Waited: 210 * time.Millisecond}},
		},
		began: at(20), ok: true, least: 10 * time.Millisecond,
	}, {
		name: "sent on by the queue before the drain",
		rep: bot.Report{
			Redirects: []bot.Redirect{{At: at(231), From: "a", To: "c", Reason: "queue"}},
			Waits:     []bot.Wait{{At: at(204), Node: "a"}, {At: at(833), Node: "c"}},
		},
		began: at(210),
	}, {
		name: "the redirect late on a starved machine",
		rep: bot.Report{
			Redirects: []bot.Redirect{
				{At: at(41), From: "d", To: "a", Reason: "queue"},
				{At: at(3948), From: "a", To: "c", Reason: "drain"},
			},
			Waits: []bot.Wait{
				{At: at(16), Node: "d"},
				{At: at(52), Node: "a"},
				{At: at(4437), Node: "c", Waited: 3035 * time.Millisecond},
			},
		},
		began: at(3000), ok: true, least: 2947 * time.Millisecond,
	}, {
		// The queue request crossed the drain's redirect: the bot never
		// waited on the draining server, so it had nothing to carry.
		name: "no wait on the draining server",
		rep: bot.Report{
			Redirects: []bot.Redirect{{At: at(100), From: "b", To: "c", Reason: "drain"}},
			Waits:     []bot.Wait{{At: at(300), Node: "c"}},
		},
		began: at(50),
	}}
	for _, tc := range tests {
		d, ok := drainedWait(tc.rep, gone)
		if ok != tc.ok {
			t.Errorf("%s: drainedWait = %+v, %v; want ok %v", tc.name, d, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if got := d.least(tc.began); got != tc.least {
			t.Errorf("%s: least = %v, want %v", tc.name, got, tc.least)
		}
		if d.after.Waited < d.least(tc.began) {
			t.Errorf("%s: arrived with %v, under the least %v", tc.name, d.after.Waited, d.least(tc.began))
		}
	}
}
