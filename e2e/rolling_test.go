package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/muster-gg/muster/examples/duel/bot"
	"github.com/muster-gg/muster/internal/testkit/fleetproc"
)

// rollingDrainTimeout is the drain timeout of the rolling restarts: the
// matches (idle players: nobody scores) outlast it.
const rollingDrainTimeout = 10 * time.Second

// rollingBots is how many bots play in the rolling restarts: 20 matches.
const rollingBots = 40

// TestRollingRestartEndsNoMatch drains and restarts each of three servers
// in turn while 40 bots play matches that outlast the drain timeout: with
// the duel's rooms moving, no match ends and no player loses its room;
// with migration off (the baseline, in the same run), the matches end at
// the drain timeout, as before rooms moved. The pauses the players saw
// and the restart's duration are reported, not asserted.
func TestRollingRestartEndsNoMatch(t *testing.T) {
	var results []string
	for _, phase := range []struct {
		name    string
		migrate bool
	}{{"migration-off", false}, {"migration-on", true}} {
		t.Run(phase.name, func(t *testing.T) {
			results = append(results, phase.name+": "+rollingRestart(t, phase.migrate))
		})
	}
	t.Logf("rolling restart of 3 servers, %d bots in %d matches, drain timeout %v:\n  %s",
		rollingBots, rollingBots/2, rollingDrainTimeout, strings.Join(results, "\n  "))
}

// rollingRestart runs one phase and returns its figures, for the log.
func rollingRestart(t *testing.T, migrate bool) string {
	cfg := fleetConfig(buildDuel(t))
	cfg.DrainTimeout = rollingDrainTimeout
	cfg.StopGrace = rollingDrainTimeout + 10*time.Second
	// A restarted server answers on its predecessor's port at once: nginx
	// must not hold it for down (10 s) for the refusals of the exit.
	cfg.UpstreamParams = " max_fails=0"
	if !migrate {
		cfg.Env = append(cfg.Env, "MUSTER__ROOM__MIGRATE__DISABLED=true")
	}
	c := &cluster{Fleet: fleetproc.Start(t, cfg)}
	bots := c.matchedIdle(t, "rolling", rollingBots)
	rooms := map[string]string{} // bot → its match
	for _, b := range bots {
		r := b.Report()
		rm, _ := r.Room()
		rooms[r.Player] = rm.ID
	}

	// The matches run where duel gathers: that server goes first, so
	// that each match moves twice, to a server drained after it.
	g := c.Gather(t, duelPlaylist)
	order := []int{}
	for i, s := range c.Running() {
		if s == g {
			order = append([]int{i}, order...)
		} else {
			order = append(order, i)
		}
	}
	start := time.Now()
	var drains []string
	movedLine := regexp.MustCompile(`rooms moved .*moved=(\d+) left=(\d+) took=(\S+) pause_max=(\S+)`)
	for _, i := range order {
		s := c.Running()[i]
		sigterm := time.Now()
		if err := s.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-s.Exited():
		case <-time.After(rollingDrainTimeout + 10*time.Second): // a bound for a stuck drain, not a measure
			t.Fatalf("%s still runs %v after SIGTERM", s.ID, time.Since(sigterm).Round(time.Millisecond))
		}
		// Not checked: a server still relaying players' connections to
		// the others cuts them after 5 s and exits 1, migration or not.
		d := fmt.Sprintf("%s exit %d after %v", s.ID, s.ExitCode(), s.ExitAt().Sub(sigterm).Round(100*time.Millisecond))
		if m := movedLine.FindStringSubmatch(s.Log()); m != nil {
			d += fmt.Sprintf(" (%s rooms moved in %s, %s left, server-side pause max %s)", m[1], m[3], m[2], m[4])
		}
		drains = append(drains, d)
		c.StartServer(t, i)
		c.WaitView(t, len(hosts))
	}
	took := time.Since(start)

	var gaps, follows, pauses []time.Duration
	ended, lost, migrated := 0, 0, 0
	if migrate {
		// Every bot plays on in its match, wherever it runs now.
		waitAll(t, 20*time.Second, "playing on after the restart", bots, func(r bot.Report) bool {
			rm, ok := r.Room()
			return ok && rm.ID == rooms[r.Player] && time.Since(rm.LastState) < time.Second
		})
	} else {
		waitAll(t, 20*time.Second, "matches ended by the drain", bots, func(r bot.Report) bool { return r.Ended() > 0 })
	}
	for _, b := range bots {
		r := b.Report()
		for _, rm := range r.Rooms {
			switch {
			case rm.Reason == "lost":
				lost++
			case rm.Reason != "":
				ended++
				if migrate || rm.Reason != "server-drained" {
					t.Errorf("%s: room %s ended %q", r.Player, rm.ID, rm.Reason)
				}
			}
			gaps = append(gaps, rm.Gap)
		}
		for _, rd := range r.Redirects {
			if rd.Reason == "migrate" {
				migrated++
				if rd.Pause > 0 {
					pauses = append(pauses, rd.Pause)
				}
			}
		}
		follows = append(follows, migrateFollows(r)...)
	}
	if migrate {
		if ended != 0 || lost != 0 {
			t.Errorf("%d bot rooms ended and %d were lost in a rolling restart that moves rooms, want 0 and 0", ended, lost)
		}
		if migrated < rollingBots {
			t.Errorf("%d migrate redirects, want at least one per bot (%d): every server drained", migrated, rollingBots)
		}
	} else if ended != rollingBots || migrated != 0 {
		t.Errorf("baseline: %d bot rooms ended by the drain and %d migrate redirects, want %d and 0", ended, migrated, rollingBots)
	}
	return fmt.Sprintf("restart took %v; bot rooms ended %d, lost %d; migrate redirects %d, followed (redirect to welcome) in %s, "+
		"pause the bot saw (last state before to first after) %s; longest pause between states per bot room (drops included) %s; drains: %s",
		took.Round(100*time.Millisecond), ended, lost, migrated, bot.Quantiles(follows), quantiles99(pauses), bot.Quantiles(gaps), strings.Join(drains, "; "))
}

// migrateFollows returns, for each migrate redirect of r, the time from
// it to the bot's next welcome.
func migrateFollows(r bot.Report) []time.Duration {
	var out []time.Duration
	var at time.Time
	for _, e := range r.Events {
		switch {
		case e.Kind == "redirect" && strings.HasSuffix(e.Detail, "(migrate)"):
			at = e.At
		case e.Kind == "welcome" && !at.IsZero():
			out = append(out, e.At.Sub(at))
			at = time.Time{}
		}
	}
	return out
}

// quantiles99 is bot.Quantiles with the 99th percentile.
func quantiles99(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	ds = slices.Sorted(slices.Values(ds))
	return fmt.Sprintf("%s, p99 %v", bot.Quantiles(ds), ds[int(0.99*float64(len(ds)-1))].Round(time.Millisecond))
}
