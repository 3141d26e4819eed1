package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/muster-gg/muster/examples/duel/bot"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/botrun"
	"github.com/muster-gg/muster/internal/testkit/fleetproc"
)

// The fleet's settings: a short heartbeat so that a dead server is gone
// quickly, and a drain timeout above a chasing match's length.
const (
	heartbeat    = 500 * time.Millisecond
	drainTimeout = 30 * time.Second
)

// The loopback addresses of the three servers.
var hosts = []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}

var (
	buildDir  string // removed by TestMain
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

func TestMain(m *testing.M) { fleetproc.Main(m, "muster-e2e-", &buildDir) }

// root returns the module's root directory.
func root(t testing.TB) string {
	t.Helper()
	return fleetproc.Root(t)
}

// buildDuel builds the example once per test process, with the race
// detector when the tests have it.
func buildDuel(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() { buildBin, buildErr = fleetproc.Build(t, buildDir, raceEnabled) })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// fleetConfig is the e2e fleet's configuration, running the server binary
// bin.
func fleetConfig(bin string) fleetproc.Config {
	return fleetproc.Config{
		Name:         "e2e",
		Bin:          bin,
		Hosts:        hosts,
		Heartbeat:    heartbeat,
		DrainTimeout: drainTimeout,
		// nginx. No checkpoints (the default): a killed server's matches
		// are lost, as testKill expects, unless a test turns them on
		// (TestCrashResumesFromCheckpoint).
		Env: []string{"MUSTER__SERVER__HTTP__TRUSTED_PROXIES=127.0.0.1"},
		Client: &http.Client{Transport: &http.Transport{
			MaxIdleConns: 200, MaxIdleConnsPerHost: 100, IdleConnTimeout: 10 * time.Second,
		}},
		Live:        []fleet.State{fleet.StateReady},
		ViewTimeout: 15 * time.Second,
		// With every player gone, a drain has nothing to wait for.
		StopGrace:    5 * time.Second,
		StopNote:     loadNote,
		Forbidden:    []string{"WARNING: DATA RACE", "panic:"},
		FailLogLines: 80,
	}
}

// loadNote is a server's load and stats, for the message of a server that
// does not stop.
func loadNote(f *fleetproc.Fleet, s *fleetproc.Server) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	cp, err := f.Capacity(ctx, s)
	return fmt.Sprintf("load %d, stats %v, err %v", cp.Load, cp.Stats, err)
}

// cluster is the fleet of duel servers on loopback behind nginx, and the
// bots that play on it.
type cluster struct {
	*fleetproc.Fleet

	mu      sync.Mutex
	players map[*testing.T][]*botrun.Runner
}

// server is one duel process.
type server = fleetproc.Server

// startCluster starts redis-server, three duel servers and nginx, and stops
// them when the test ends.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	return &cluster{Fleet: fleetproc.Start(t, fleetConfig(buildDuel(t)))}
}

// player starts a bot named name that plays through nginx until the test
// ends or leave stops it; its report is logged when the test fails.
func (c *cluster) player(t *testing.T, name string, cfg bot.Config) *bot.Bot {
	t.Helper()
	cfg.URL, cfg.Player, cfg.HTTPClient = c.URL, name, c.Client
	if cfg.Confirm == 0 {
		// A moved queue place is confirmed by the new server after the
		// bot's new connection is up: on a starved machine that took
		// more than the bot's 2 s, the bot queued again by itself, and
		// the queue test (which counts those) failed. The test checks
		// that the place moves, not how fast.
		cfg.Confirm = 15 * time.Second
	}
	b, err := bot.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := botrun.Start(name, b)
	c.mu.Lock()
	if c.players == nil {
		c.players = map[*testing.T][]*botrun.Runner{}
	}
	c.players[t] = append(c.players[t], p)
	c.mu.Unlock()
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("%s: Run: %v", name, err)
		}
		if t.Failed() {
			t.Logf("%s:\n%s", name, b.Report().Log())
		}
	})
	return b
}

// leave stops every bot of test t and waits until no server has a player
// seated: players who leave leave no seat behind, and the next subtest
// (a drain) finds no room left over.
func (c *cluster) leave(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	ps := c.players[t]
	delete(c.players, t)
	c.mu.Unlock()
	for _, p := range ps {
		if err := p.Stop(); err != nil {
			t.Errorf("%s: Run: %v", p.Name, err)
		}
	}
	for _, s := range c.Running() {
		c.waitIdle(t, s)
	}
}

// waitAll waits until cond holds for every bot, or fails the test after
// timeout, naming the bots it was still waiting for.
var waitAll = botrun.WaitAll

// matchedIdle starts n idle bots named prefix-0 to prefix-(n-1), queues
// them for duel and returns them once each has a state of its match.
func (c *cluster) matchedIdle(t *testing.T, prefix string, n int) []*bot.Bot {
	t.Helper()
	bots := make([]*bot.Bot, n)
	for i := range bots {
		bots[i] = c.player(t, fmt.Sprintf("%s-%d", prefix, i), bot.Config{Style: bot.StyleIdle})
		bots[i].Queue("duel")
	}
	waitAll(t, 30*time.Second, "matched", bots, func(r bot.Report) bool { rm, ok := r.Room(); return ok && rm.Snapshots > 0 })
	return bots
}
