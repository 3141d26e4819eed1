package compose

import (
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/muster-gg/muster/examples/duel/bot"
	"github.com/muster-gg/muster/internal/testkit/botrun"
)

// players are the bots of a test, playing through the fleet's public
// address until the test ends.
type players struct {
	url    string
	client *http.Client

	mu      sync.Mutex
	bots    []*bot.Bot
	runners []*botrun.Runner
}

// newPlayers returns the players of test t on url; when t ends every bot
// stops (leaving its room), and each bot's log is shown if t failed.
func newPlayers(t *testing.T, url string) *players {
	ps := &players{url: url, client: &http.Client{Transport: &http.Transport{
		MaxIdleConns: 200, MaxIdleConnsPerHost: 100, IdleConnTimeout: 10 * time.Second,
	}}}
	t.Cleanup(ps.client.CloseIdleConnections)
	return ps
}

// start starts a bot named name with cfg.
func (ps *players) start(t *testing.T, name string, cfg bot.Config) *bot.Bot {
	t.Helper()
	cfg.URL, cfg.Player, cfg.HTTPClient = ps.url, name, ps.client
	if cfg.Confirm == 0 {
		// The moved queue place is confirmed after the new connection is
		// up; on a starved machine that took more than the default 2 s.
		cfg.Confirm = 15 * time.Second
	}
	b, err := bot.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := botrun.Start(name, b)
	ps.mu.Lock()
	ps.bots = append(ps.bots, b)
	ps.runners = append(ps.runners, r)
	ps.mu.Unlock()
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Errorf("%s: Run: %v", name, err)
		}
		if t.Failed() {
			t.Logf("%s:\n%s", name, b.Report().Log())
		}
	})
	return b
}

// stop stops bot b (it leaves its room or lobby) and forgets it.
func (ps *players) stop(t *testing.T, b *bot.Bot) {
	t.Helper()
	ps.mu.Lock()
	var r *botrun.Runner
	ps.runners = slices.DeleteFunc(ps.runners, func(x *botrun.Runner) bool {
		if x.Bot == b {
			r = x
		}
		return x.Bot == b
	})
	ps.bots = slices.DeleteFunc(ps.bots, func(x *bot.Bot) bool { return x == b })
	ps.mu.Unlock()
	if err := r.Stop(); err != nil {
		t.Errorf("%s: Run: %v", r.Name, err)
	}
}

// stopAll stops every bot started so far and waits for them.
func (ps *players) stopAll(t *testing.T) {
	t.Helper()
	ps.mu.Lock()
	rs := ps.runners
	ps.runners = nil
	ps.mu.Unlock()
	for _, r := range rs {
		if err := r.Stop(); err != nil {
			t.Errorf("%s: Run: %v", r.Name, err)
		}
	}
}

// running returns the bots not stopped yet.
func (ps *players) running() []*bot.Bot {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var bs []*bot.Bot
	for _, r := range ps.runners {
		bs = append(bs, r.Bot)
	}
	return bs
}

// all returns every bot started.
func (ps *players) all() []*bot.Bot {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return slices.Clone(ps.bots)
}

// waitAll waits until cond holds for every bot, or fails the test after
// timeout, naming the bots it was still waiting for.
var waitAll = botrun.WaitAll

func seated(r bot.Report) bool { _, ok := r.Room(); return ok }
