package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/examples/duel/bot"
)

// A drain redirect crosses the queue request the bot sent after its
// welcome (a draining server reads no request once its drain's last
// redirects have begun): the request dies with the connection, and no
// queue place comes with the redirect. The bot, whose request was never
// confirmed, queues again at once on the next server instead of waiting
// Config.Confirm for a place that does not exist.
func TestDrainRedirectBeforeQueueConfirmed(t *testing.T) {
	f := newFake(t, func(c *fakeConn) {
		switch c.node {
		case "a":
			c.welcome("")
			c.redirect("drain")
		case "b":
			c.welcome("")
			if c.expect("queue") != nil {
				c.send(map[string]any{"type": "queue.waiting", "playlist": "duel", "node": "b"})
			}
			c.expect("never") // until the bot closes
		}
	})
	b := newBot(t, f, bot.Config{Player: "p1", Confirm: time.Hour})
	run(t, b)
	b.Queue("duel")
	if err := waitFor(b, func(r bot.Report) bool { return len(r.Waits) > 0 }); err != nil {
		t.Fatalf("no queue.waiting: %v; hellos %v, report %+v", err, f.Hellos(), b.Report())
	}
	r := b.Report()
	if got, want := strings.Join(f.Hellos(), ","), "a new,b rejoin"; got != want {
		t.Errorf("hellos %s, want %s", got, want)
	}
	// Requeues is 0 when the redirect came before the bot wrote its
	// request at all: it is still in the outbox and goes to b.
	if r.Waits[0].Node != "b" || r.Requeues > 1 {
		t.Errorf("waits %+v, requeues %d; want to wait on b, requeued at most once", r.Waits, r.Requeues)
	}
}

// A drain redirect that moved a confirmed queue place is waited for, not
// answered by a second queue request.
func TestDrainRedirectAfterQueueConfirmed(t *testing.T) {
	f := newFake(t, func(c *fakeConn) {
		switch c.node {
		case "a":
			c.welcome("")
			if c.expect("queue") != nil {
				c.send(map[string]any{"type": "queue.waiting", "playlist": "duel", "node": "a"})
				c.redirect("drain")
			}
		case "b":
			c.welcome("")
			c.send(map[string]any{"type": "queue.waiting", "playlist": "duel", "waited_ms": 1200, "node": "b"})
			c.expect("never") // until the bot closes; a queue here would be a requeue
		}
	})
	b := newBot(t, f, bot.Config{Player: "p1", Confirm: time.Hour})
	run(t, b)
	b.Queue("duel")
	if err := waitFor(b, func(r bot.Report) bool { return len(r.Waits) == 2 }); err != nil {
		t.Fatalf("waits: %v; report %+v", err, b.Report())
	}
	if r := b.Report(); r.Waits[1].Node != "b" || r.Requeues != 0 {
		t.Errorf("waits %+v, requeues %d; want the place moved to b, no requeue", r.Waits, r.Requeues)
	}
}

// waitFor waits up to 5 s until cond holds for b's report.
func waitFor(b *bot.Bot, cond func(bot.Report) bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return b.Wait(ctx, cond)
}
