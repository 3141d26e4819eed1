package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/muster-gg/muster/examples/duel/bot"
	"github.com/muster-gg/muster/internal/testkit/fleetproc"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// crashBots is how many bots play in TestCrashResumesFromCheckpoint: 10
// matches.
const crashBots = 20

// crashInterval is the checkpoint interval of TestCrashResumesFromCheckpoint.
const crashInterval = time.Second

// crashRate is the duel's steps per second (muster.room.rate's default).
const crashRate = 60

// TestCrashResumesFromCheckpoint kills (SIGKILL) the server where 20 bots
// play their matches, with checkpoints every second: within 10 s every
// match runs again on one of the two others, from its last checkpoint,
// with its players back in their seats, having lost at most one interval
// of steps. The time to the first state of the resumed room and the steps
// lost are logged.
func TestCrashResumesFromCheckpoint(t *testing.T) {
	cfg := fleetConfig(buildDuel(t))
	cfg.Env = append(slices.Clone(cfg.Env), fmt.Sprintf("MUSTER__ROOM__CHECKPOINT__INTERVAL=%s", crashInterval))
	c := &cluster{Fleet: fleetproc.Start(t, cfg)}
	bots := c.matchedIdle(t, "crash", crashBots)
	k := c.Gather(t, duelPlaylist)
	rooms := map[string]string{} // bot → its match
	for _, b := range bots {
		r := b.Report()
		rm, _ := r.Room()
		if rm.Node != k.ID {
			t.Fatalf("%s plays on %s, not where duel gathers (%s)", r.Player, rm.Node, k.ID)
		}
		rooms[r.Player] = rm.ID
	}
	// Every match is checkpointed after it began: one round of the
	// server's checkpoints written beyond those written so far.
	before := checkpointsWritten(t, c, k)
	testrun.WaitFor(t, "a round of checkpoints of every match", func() bool {
		return checkpointsWritten(t, c, k) >= before+crashBots/2
	})

	killed := time.Now()
	k.Kill(syscall.SIGKILL)
	gone := c.watchGone(k.ID, killed)
	var mu sync.Mutex                  // cond runs on a goroutine per bot
	back := map[string]time.Duration{} // bot → kill to its first state in the resumed room
	waitAll(t, 10*time.Second, "back in its match, resumed on another server", bots, func(r bot.Report) bool {
		rm, ok := r.Room()
		if !ok || rm.ID != rooms[r.Player] || rm.Node == k.ID || !rm.LastState.After(killed) {
			return false
		}
		mu.Lock()
		if _, seen := back[r.Player]; !seen {
			back[r.Player] = time.Since(killed)
		}
		mu.Unlock()
		return true
	})
	took := time.Since(killed)

	var lost []time.Duration
	var regained, maxRewind uint64
	resumers := map[string]int{}
	for _, b := range bots {
		r := b.Report()
		rm, _ := r.Room()
		resumers[rm.Node]++
		if rm.Rewind > uint64(crashRate*crashInterval/time.Second) {
			t.Errorf("%s: room %s went back %d steps, over one checkpoint interval (%d)", r.Player, rm.ID, rm.Rewind, crashRate*crashInterval/time.Second)
		}
		maxRewind = max(maxRewind, rm.Rewind)
		lost = append(lost, time.Duration(rm.Rewind)*time.Second/crashRate)
		regained += uint64(rm.Regained)
		for _, x := range r.Rooms {
			if x.Reason != "" {
				t.Errorf("%s: room %s ended %q", r.Player, x.ID, x.Reason)
			}
		}
	}
	var backs []time.Duration
	for _, d := range back {
		backs = append(backs, d)
	}
	var where []string
	for n, count := range resumers {
		where = append(where, fmt.Sprintf("%s: %d bots", n, count))
	}
	slices.Sort(where)
	t.Logf("SIGKILL of %s with %d matches, checkpoint every %v: gone from every view after %v; every bot back in its match after %v "+
		"(kill to first state of the resumed room %s); steps lost (as time at %d steps/s) %s, most %d steps; "+
		"bots that gave their room up for lost before it was resumed: %d; resumed on %s",
		k.ID, crashBots/2, crashInterval, gone(), took.Round(100*time.Millisecond), bot.Quantiles(backs), crashRate,
		bot.Quantiles(lost), maxRewind, regained, strings.Join(where, ", "))
}

// checkpointsWritten returns server s's count of checkpoints written
// (muster_room_checkpoints_total{result="written"} on its /metrics), 0
// while it reports none.
func checkpointsWritten(t *testing.T, c *cluster, s *fleetproc.Server) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	code, body, err := c.Get(ctx, s, "/metrics")
	if err != nil || code != 200 {
		t.Fatalf("%s /metrics: %d, %v", s.ID, code, err)
	}
	const series = `muster_room_checkpoints_total{result="written"} `
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, series); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s /metrics: %q: %v", s.ID, line, err)
			}
			return n
		}
	}
	return 0
}
