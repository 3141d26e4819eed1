// Package botrun runs the duel example's bots (examples/duel/bot) for the
// end-to-end suites: Start runs a bot in a goroutine that its Runner
// owns, Stop ends it, and WaitAll waits until a condition holds for every
// bot of a group.
//
// A Runner's methods are safe for concurrent use; WaitAll is for the
// test's goroutine.
package botrun

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/muster-gg/muster/examples/duel/bot"
)

// Runner is a bot and the goroutine running it.
type Runner struct {
	// Name names the bot in messages.
	Name string
	// Bot is the bot.
	Bot *bot.Bot

	cancel context.CancelFunc
	errc   chan error
	once   sync.Once
	err    error
}

// Start runs b until Stop.
func Start(name string, b *bot.Bot) *Runner {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runner{Name: name, Bot: b, cancel: cancel, errc: make(chan error, 1)}
	go func() { r.errc <- b.Run(ctx) }()
	return r
}

// Stop stops the bot (it leaves its room and closes its connection) and
// returns Run's error. It may be called more than once.
func (r *Runner) Stop() error {
	r.once.Do(func() {
		r.cancel()
		r.err = <-r.errc
	})
	return r.err
}

// maxLogs bounds the bot logs a failed WaitAll shows.
const maxLogs = 4

// WaitAll waits until cond holds for every bot, or fails the test after
// timeout, naming the bots it was still waiting for and showing the
// first few bots' logs: the failure says what those bots saw even where
// the test's output is cut short.
func WaitAll(t testing.TB, timeout time.Duration, what string, bots []*bot.Bot, cond func(bot.Report) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		missing []string
		logs    []string
	)
	for _, b := range bots {
		wg.Go(func() {
			if err := b.Wait(ctx, cond); err != nil {
				mu.Lock()
				rep := b.Report()
				missing = append(missing, fmt.Sprintf("%s (%v)", rep.Player, err))
				logs = append(logs, rep.Log())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(missing) > 0 {
		slices.Sort(missing)
		slices.Sort(logs)
		logs = logs[:min(len(logs), maxLogs)]
		t.Fatalf("%s: %d of %d bots did not get there within %v: %s\n%s", what, len(missing), len(bots), timeout, strings.Join(missing, ", "), strings.Join(logs, "\n"))
	}
}
