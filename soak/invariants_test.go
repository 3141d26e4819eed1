package soak

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/examples/duel/bot"
)

// invariants checks the fleet and the crowd after a scenario.
type invariants struct {
	c     *cluster
	cr    *crowd
	t0    time.Time
	since time.Time // the scenario's start, set by mark
}

// mark starts a scenario: lost rooms and drops are counted from now.
func (inv *invariants) mark() time.Time {
	inv.since = time.Now()
	return inv.since
}

// status is the crowd as check last saw it.
type status struct {
	reports  []bot.Report
	states   map[state]int
	byNode   map[string]int // seated bots per server
	told     map[string]int // why, for the bots told
	claimsAt time.Time      // when Redis's claims and the servers' seats first agreed with the bots
}

// lostRoom is a room a bot reported lost.
type lostRoom struct {
	player string
	room   bot.Room
	log    string // the bot's log
}

// lost returns the rooms that were lost since t: reported "lost" by a bot
// after t, and seen to end properly by no one. A bot away when its room
// ended never got the room's end and calls the room lost when it comes
// back (a loaded machine makes such drops); another player's report of the
// end says it was not. Room ids are per server, and a restarted server has
// a new id, so a node and a room id name one room for the whole run.
func (s status) lost(t time.Time) []lostRoom {
	endedWell := map[string]bool{}
	for _, r := range s.reports {
		for _, rm := range r.Rooms {
			if rm.Reason != "" && rm.Reason != "lost" {
				endedWell[rm.Node+"/"+rm.ID] = true
			}
		}
	}
	var out []lostRoom
	for _, r := range s.reports {
		for _, rm := range r.Rooms {
			if rm.Reason == "lost" && rm.Ended.After(t) && !endedWell[rm.Node+"/"+rm.ID] {
				out = append(out, lostRoom{player: r.Player, room: rm, log: r.Log()})
			}
		}
	}
	return out
}

// lostSince returns the number of rooms lost since t, as lost judges them:
// the count a scenario reports agrees with the invariant check.
func (s status) lostSince(t time.Time) int { return len(s.lost(t)) }

// troubleSince counts the drops and the failed attempts since t, and
// describes a few of them.
func (s status) troubleSince(t time.Time) (drops, failures int, list string) {
	var out []string
	for _, r := range s.reports {
		for _, d := range r.Drops {
			if d.At.After(t) {
				drops++
				out = append(out, fmt.Sprintf("%s dropped by %s at +%v: %d %s", r.Player, d.Node, d.At.Sub(t).Round(time.Millisecond), d.Code, d.Reason))
			}
		}
		for _, f := range r.Failures {
			if f.At.After(t) {
				failures++
				out = append(out, fmt.Sprintf("%s failed at +%v (%s, asked for %q): %s", r.Player, f.At.Sub(t).Round(time.Millisecond), f.Stage, f.Node, f.Err))
			}
		}
	}
	return drops, failures, strings.Join(out[:min(len(out), 10)], "\n")
}

// dropList describes the drops and failed attempts since t, a few of them.
func (s status) dropList(t time.Time) string {
	_, _, list := s.troubleSince(t)
	return list
}

func (s status) String() string {
	nodes := slices.Sorted(maps.Keys(s.byNode))
	var per []string
	for _, id := range nodes {
		per = append(per, fmt.Sprintf("%s %d", id, s.byNode[id]))
	}
	out := fmt.Sprintf("after it: %d seated (%s), %d waiting, %d told", s.states[seated], strings.Join(per, ", "), s.states[waiting], s.states[told])
	if len(s.told) > 0 {
		out += fmt.Sprintf(" %v", s.told)
	}
	return out
}

// snapshots returns the state packets the bots received so far.
func (inv *invariants) snapshots() int {
	n := 0
	for _, p := range inv.cr.players {
		for _, rm := range p.bot.Report().Rooms {
			n += rm.Snapshots
		}
	}
	return n
}

func (inv *invariants) look() status {
	st := status{states: map[state]int{}, byNode: map[string]int{}, told: map[string]int{}}
	for _, p := range inv.cr.players {
		ended := p.ended()
		r := p.bot.Report()
		st.reports = append(st.reports, r)
		s := stateOf(r, ended)
		st.states[s]++
		switch s {
		case seated:
			rm, _ := r.Room()
			st.byNode[rm.Node]++
		case told:
			why := "error packet"
			if ended {
				why = fmt.Sprint(p.err)
			} else if n := len(r.Errors); n > 0 {
				why = r.Errors[n-1]
			}
			st.told[why]++
		}
	}
	return st
}

// settle waits until every bot is seated, waiting or told why, with at
// most one waiting (a duel needs two; the queue gathers in one place).
func (inv *invariants) settle(t *testing.T, phase string, allowed func(bot.Room) bool) status {
	t.Helper()
	timeout := 60*time.Second + time.Duration(len(inv.cr.players))*10*time.Millisecond
	deadline := time.Now().Add(timeout)
	for {
		inv.checkLogs(t)
		st := inv.look()
		if st.states[unsettled] == 0 && st.states[waiting] <= 1 {
			return st
		}
		if time.Now().After(deadline) {
			var sample []string
			for _, r := range st.reports {
				if s := stateOf(r, false); s == unsettled || s == waiting {
					sample = append(sample, tail(r.Log(), 12))
					if len(sample) == 4 {
						break
					}
				}
			}
			t.Fatalf("%s: not settled %v after the scenario: %v unsettled, %v waiting (want at most 1); %s\nsome of them:\n%s",
				phase, timeout, st.states[unsettled], st.states[waiting], st, strings.Join(sample, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkLogs fails the test at once when a server logged a panic.
func (inv *invariants) checkLogs(t *testing.T) {
	t.Helper()
	for _, s := range inv.c.Started() {
		if bad := badLog(s.Log()); bad != "" {
			t.Fatalf("%s logged %s:\n%s", s.ID, bad, tail(s.Log(), 60))
		}
	}
}

// check waits for the crowd to settle, then checks that the servers'
// seats and Redis's claims agree with where the bots play: each seated
// bot's claim names the running server its room runs on, each server
// seats exactly the bots that say they play there (nobody is seated
// twice), and no room was lost since mark unless allowed says it may be.
func (inv *invariants) check(t *testing.T, phase string, allowed func(bot.Room) bool) status {
	t.Helper()
	st := inv.settle(t, phase, allowed)
	for _, l := range st.lost(inv.since) {
		if allowed == nil || !allowed(l.room) {
			t.Errorf("%s: %s lost its room %s on %s at +%v:\n%s", phase, l.player, l.room.ID, l.room.Node, l.room.Ended.Sub(inv.since).Round(time.Millisecond), tail(l.log, 25))
		}
	}

	// A duel's load is its seated players: no server seats more than its
	// max-load (F9); the players it has no room for overflow or wait.
	for id, n := range st.byNode {
		if n > inv.c.maxLoad {
			t.Errorf("%s: %s seats %d players, above its max-load %d", phase, id, n, inv.c.maxLoad)
		}
	}

	deadline := time.Now().Add(30 * time.Second)
	for {
		problems := inv.agree(st)
		if len(problems) == 0 {
			st.claimsAt = time.Now()
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: seats and claims disagree with the bots 30s after they settled (%d problems):\n%s",
				phase, len(problems), strings.Join(problems[:min(len(problems), 20)], "\n"))
		}
		time.Sleep(200 * time.Millisecond)
		st = inv.settle(t, phase, allowed)
	}
}

// agree returns what disagrees between the bots (st), the servers'
// muster_players_seated and Redis's player claims.
func (inv *invariants) agree(st status) []string {
	c := inv.c
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	var problems []string
	running := map[string]bool{}
	for _, s := range c.Running() {
		running[s.ID] = true
	}
	_, per, err := c.sumMetric(ctx, "muster_players_seated")
	if err != nil {
		return []string{err.Error()}
	}
	for id := range running {
		if got, want := int(per[id]), st.byNode[id]; got != want {
			problems = append(problems, fmt.Sprintf("%s seats %d players, %d bots say they play there", id, got, want))
		}
	}
	var ids, nodes []string
	for _, r := range st.reports {
		if rm, ok := r.Room(); ok {
			if !running[rm.Node] {
				problems = append(problems, fmt.Sprintf("%s is seated in %s on %s, which does not run", r.Player, rm.ID, rm.Node))
			}
			ids = append(ids, r.Player)
			nodes = append(nodes, rm.Node)
		}
	}
	for i := 0; i < len(ids); i += 500 {
		j := min(i+500, len(ids))
		keys := make([]string, 0, j-i)
		for _, id := range ids[i:j] {
			keys = append(keys, "muster:{"+c.Name+"}:c:player:"+id)
		}
		vals, err := c.rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return append(problems, "redis: "+err.Error())
		}
		for k, v := range vals {
			got, _ := v.(string)
			if got != nodes[i+k] {
				problems = append(problems, fmt.Sprintf("%s plays on %s, Redis's claim says %q", ids[i+k], nodes[i+k], got))
			}
		}
	}
	return problems
}
