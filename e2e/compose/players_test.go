package compose

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/muster-gg/muster/examples/duel/bot"
)

// players are the bots of a test, playing through the fleet's public
// address until the test ends.
type players struct {
	url    string
	client *http.Client

	mu      sync.Mutex
	bots    []*bot.Bot
	runners []*runner
}

// runner is a bot and the goroutine running it.
type runner struct {
	name   string
	bot    *bot.Bot
	cancel context.CancelFunc
	errc   chan error
	once   sync.Once
	err    error
}

// stop stops the bot (it leaves its room and closes its connection) and
// returns Run's error. It may be called more than once.
func (r *runner) stop() error {
	r.once.Do(func() {
		r.cancel()
		r.err = <-r.errc
	})
	return r.err
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
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{name: name, bot: b, cancel: cancel, errc: make(chan error, 1)}
	go func() { r.errc <- b.Run(ctx) }()
	ps.mu.Lock()
	ps.bots = append(ps.bots, b)
	ps.runners = append(ps.runners, r)
	ps.mu.Unlock()
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("%s: Run: %v", name, err)
		}
		if t.Failed() {
			t.Logf("%s:\n%s", name, b.Report().Log())
		}
	})
	return b
}

// stopAll stops every bot started so far and waits for them.
func (ps *players) stopAll(t *testing.T) {
	t.Helper()
	ps.mu.Lock()
	rs := ps.runners
	ps.runners = nil
	ps.mu.Unlock()
	for _, r := range rs {
		if err := r.stop(); err != nil {
			t.Errorf("%s: Run: %v", r.name, err)
		}
	}
}

// all returns every bot started.
func (ps *players) all() []*bot.Bot {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return slices.Clone(ps.bots)
}

// waitAll waits until cond holds for every bot, or fails the test after
// timeout, naming the bots it still waited for.
func waitAll(t *testing.T, timeout time.Duration, what string, bots []*bot.Bot, cond func(bot.Report) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		missing []string
	)
	for _, b := range bots {
		wg.Go(func() {
			if err := b.Wait(ctx, cond); err != nil {
				mu.Lock()
				missing = append(missing, fmt.Sprintf("%s (%v)", b.Report().Player, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(missing) > 0 {
		slices.Sort(missing)
		t.Fatalf("%s: %d of %d bots did not get there within %v: %s", what, len(missing), len(bots), timeout, strings.Join(missing, ", "))
	}
}

func seated(r bot.Report) bool { _, ok := r.Room(); return ok }
