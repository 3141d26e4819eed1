package compose

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/examples/duel/bot"
	"github.com/muster-gg/muster/internal/testkit/dockertest"
)

// stopGrace returns the game service's stop_grace_period in
// docker-compose.yml: how long a removed server may take to drain.
func stopGrace(t *testing.T) time.Duration {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(moduleRoot(t), "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			StopGracePeriod string `yaml:"stop_grace_period"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	d, err := time.ParseDuration(c.Services["game"].StopGracePeriod)
	if err != nil {
		t.Fatalf("docker-compose.yml: the game's stop_grace_period: %v", err)
	}
	return d
}

// drained is a queue place a drain moved: before is the last
// queue.waiting packet the bot read from the draining server, after the
// first it read once the drain redirected it.
type drained struct{ before, after bot.Wait }

// least returns the least time the bot may arrive with when the drain
// began no earlier than began (by the test's clock, which the bot's
// shares). The server sent before when the bot had waited before.Waited,
// no later than the bot read it, and handed the place over after that and
// after began: the time waited then is at least before.Waited, plus the
// time from reading before to began. The packets carry whole
// milliseconds, so a millisecond less is allowed.
func (d drained) least(began time.Time) time.Duration {
	return d.before.Waited + max(began.Sub(d.before.At), 0) - time.Millisecond
}

// drainedWait finds in rep the bot's queue place moved by the drain of
// one of the servers gone: a drain redirect from a server where the bot
// waited, and the first queue.waiting packet after it.
func drainedWait(rep bot.Report, gone []string) (drained, bool) {
	for _, rd := range rep.Redirects {
		if rd.Reason != "drain" || !slices.Contains(gone, rd.From) {
			continue
		}
		var before, after *bot.Wait
		for i := range rep.Waits {
			w := &rep.Waits[i]
			switch {
			case w.At.Before(rd.At) && w.Node == rd.From:
				before = w
			case !w.At.Before(rd.At) && after == nil:
				after = w
			}
		}
		if before != nil && after != nil {
			return drained{*before, *after}, true
		}
	}
	return drained{}, false
}

// run is the state the steps share: the project, its servers, the bots.
type run struct {
	t       *testing.T
	p       *dockertest.Project
	client  *http.Client
	port    int
	key     []string
	events  *dockertest.Events
	ps      *players
	servers []server
	// logs returns a first server's log so far, by container.
	logs   map[string]func() string
	record func(step, what, value string)
}

// nodes returns the node ids of ss.
func nodes(ss []server) []string {
	var ids []string
	for _, s := range ss {
		ids = append(ids, s.Node)
	}
	return ids
}

// waitLanded waits until every running bot's connection is on one of the
// servers ss and none is without a room it had (no room ended "lost").
func (r *run) waitLanded(step string, ss []server, timeout time.Duration) {
	r.t.Helper()
	live := nodes(ss)
	waitAll(r.t, timeout, step+": every bot on a running server", r.ps.running(), func(rep bot.Report) bool {
		return slices.Contains(live, rep.Node())
	})
	for _, b := range r.ps.all() {
		for _, rm := range b.Report().Rooms {
			if rm.Reason == "lost" {
				r.t.Errorf("%s: %s lost its room %s on %s", step, b.Report().Player, rm.ID, rm.Node)
			}
		}
	}
}

// scaleDown is step 3: docker compose up -d --scale game=3 while matches
// run, one bot waits in the duel queue and lobbies wait to start. The two
// removed servers (compose removes the highest numbers) drain and exit 0
// within stop_grace_period; the queue's and the lobbies' players move with
// what they had; the removed servers' matches end by the drain rule (to
// their end, or "server-drained" at the drain timeout); no player is lost.
func (r *run) scaleDown(ctx context.Context) {
	t := r.t
	t.Helper()
	removed, kept := r.servers[3:], r.servers[:3]
	gone := nodes(removed)

	// Lobbies of two waiting to start, wherever round robin puts them,
	// and a bot waiting alone in the duel queue.
	var lobbyHosts, lobbyBots []*bot.Bot
	for i := range 5 {
		h := r.ps.start(t, fmt.Sprintf("wait-lobby-%d-host", i), bot.Config{Style: bot.StyleRandom})
		h.CreateLobby()
		lobbyHosts = append(lobbyHosts, h)
	}
	waitAll(t, 30*time.Second, "waiting lobbies created", lobbyHosts, func(rep bot.Report) bool { return rep.Lobby.Code != "" })
	codes := map[string]string{} // player → lobby code
	for i, h := range lobbyHosts {
		code := h.Report().Lobby.Code
		name := fmt.Sprintf("wait-lobby-%d-member", i)
		m := r.ps.start(t, name, bot.Config{Style: bot.StyleRandom})
		m.JoinLobby(code)
		codes[h.Report().Player], codes[name] = code, code
		lobbyBots = append(lobbyBots, h, m)
	}
	waitAll(t, 30*time.Second, "waiting lobbies joined", lobbyBots, func(rep bot.Report) bool { return len(rep.Lobby.Members) == 2 })
	waiter := r.ps.start(t, "waiter", bot.Config{})
	waiter.Queue("duel")
	waitAll(t, 15*time.Second, "waiter in the queue", []*bot.Bot{waiter}, func(rep bot.Report) bool { return len(rep.Waits) > 0 })

	// What runs on the servers to be removed.
	onGone := map[*bot.Bot]bot.Room{} // seated there
	movedLobbies := 0
	for _, b := range r.ps.all() {
		rep := b.Report()
		if rm, ok := rep.Room(); ok && slices.Contains(gone, rm.Node) {
			onGone[b] = rm
		}
		if codes[rep.Player] != "" && rep.Player == rep.Lobby.Host && slices.Contains(gone, rep.Lobby.Node) {
			movedLobbies++
		}
	}

	grace := stopGrace(t)
	start := time.Now()
	r.p.Must(ctx, r.key, cmdScaleDown)
	took := time.Since(start)
	var exits []string
	for _, s := range removed {
		ectx, cancel := context.WithTimeout(ctx, grace+30*time.Second)
		x, err := r.events.Exit(ectx, s.Container)
		cancel()
		if err != nil {
			t.Fatalf("%s: no exit seen: %v", s.Name, err)
		}
		if x.Code != 0 {
			t.Errorf("%s exited %d, want 0 (drained); its log:\n%s", s.Name, x.Code, r.logs[s.Container]())
		}
		if d := x.At.Sub(start); d > grace {
			t.Errorf("%s exited %v after the command, beyond stop_grace_period %v: killed, not drained", s.Name, d, grace)
		}
		exits = append(exits, fmt.Sprintf("%s exit %d after %v", s.Name, x.Code, x.At.Sub(start).Round(100*time.Millisecond)))
	}
	f := waitFleet(t, r.p, r.client, 3, r.port)
	if !slices.Equal(nodes(f.servers), nodes(kept)) {
		t.Fatalf("after %s the servers are %v, want %v", cmdScaleDown, nodes(f.servers), nodes(kept))
	}
	r.servers = f.servers

	// The waiting bot waits on a kept server, with the time it had
	// waited, and is matched with a newcomer.
	var waited time.Duration
	waitAll(t, 30*time.Second, "waiter waits on a kept server", []*bot.Bot{waiter}, func(rep bot.Report) bool {
		w := rep.Waits[len(rep.Waits)-1]
		waited = w.Waited
		return !slices.Contains(gone, w.Node)
	})
	// Where the drain moved the waiter's place (the queue may have sent
	// it to a kept server before: then there was nothing to carry), it
	// arrived with the time it had waited on the removed server.
	dw, queueGone := drainedWait(waiter.Report(), gone)
	if least := dw.least(start); queueGone && dw.after.Waited < least {
		t.Errorf("the waiter arrived on %s with %v waited, want at least %v: it had waited %v on the draining %s, %v before the scale-down began",
			dw.after.Node, dw.after.Waited, least, dw.before.Waited, dw.before.Node, start.Sub(dw.before.At))
	}
	partner := r.ps.start(t, "waiter-partner", bot.Config{})
	partner.Queue("duel")
	waitAll(t, 30*time.Second, "waiter matched", []*bot.Bot{waiter, partner}, seated)

	// The lobbies live on kept servers with both members.
	waitAll(t, 30*time.Second, "lobbies on kept servers", lobbyBots, func(rep bot.Report) bool {
		return rep.Lobby.Code == codes[rep.Player] && len(rep.Lobby.Members) == 2 && !slices.Contains(gone, rep.Lobby.Node)
	})

	// The removed servers' matches moved to a kept server (the duel
	// opts in to moving rooms), or ended by the drain rule.
	ended := map[string]int{}
	for b, rm := range onGone {
		rep := b.Report()
		i := slices.IndexFunc(rep.Rooms, func(x bot.Room) bool { return x.ID == rm.ID })
		if i < 0 {
			t.Errorf("%s: room %s of the removed %s is not in its report", rep.Player, rm.ID, rm.Node)
			continue
		}
		x := rep.Rooms[i]
		reason := x.Reason
		switch {
		case x.Node != rm.Node && !slices.Contains(gone, x.Node):
			ended["moved to a kept server"]++
		case strings.HasPrefix(reason, "won by "):
			ended["played to the end"]++
		case reason == "server-drained":
			ended["ended at the drain timeout"]++
		default:
			t.Errorf("%s: room %s on the removed %s ended %q, want moved to a kept server, played to its end or server-drained", rep.Player, rm.ID, rm.Node, reason)
		}
	}
	r.waitLanded("scale down", r.servers, 30*time.Second)
	r.record("3 up --scale game=3", fmt.Sprintf("the 2 removed servers' exits (stop_grace_period %v)", grace), strings.Join(exits, ", ")+fmt.Sprintf("; the command took %v", took.Round(100*time.Millisecond)))
	r.record("3 up --scale game=3", "players on them: seated, lobbies moved, queue moved",
		fmt.Sprintf("%d seated (%v); %d of 5 waiting lobbies moved; the duel queue %s (waited %v on arrival)",
			len(onGone), ended, movedLobbies, map[bool]string{true: "moved", false: "was on a kept server"}[queueGone], waited.Round(100*time.Millisecond)))
	r.record("3 up --scale game=3", "players lost", "0")
}

// restartRedis is step 4: docker compose restart redis while bots play:
// the servers see each other again, every connected bot's claim is back in
// the new Redis, naming its server, and no player is lost; a new pair is
// matched after.
func (r *run) restartRedis(ctx context.Context) {
	t := r.t
	t.Helper()
	r.checkClaims(ctx, "before the restart", 15*time.Second)
	start := time.Now()
	r.p.Must(ctx, r.key, cmdRestart)
	f := waitFleet(t, r.p, r.client, 3, r.port)
	formed := f.readyAt.Sub(start)
	claims := r.checkClaims(ctx, "after the restart", 30*time.Second)
	reasserted := time.Since(start)
	pair := []*bot.Bot{
		r.ps.start(t, "after-redis-0", bot.Config{}),
		r.ps.start(t, "after-redis-1", bot.Config{}),
	}
	for _, b := range pair {
		b.Queue("duel")
	}
	waitAll(t, 30*time.Second, "matched after the restart", pair, seated)
	r.waitLanded("redis restart", r.servers, 30*time.Second)
	r.record("4 restart redis", "fleet re-formed / claims of all connected players back", fmt.Sprintf("%v / %v (%d claims)", formed.Round(100*time.Millisecond), reasserted.Round(100*time.Millisecond), claims))
	r.record("4 restart redis", "players lost", "0")
}

// checkClaims waits up to timeout until Redis holds the claims of every
// connected bot: its connection's (c:conn:<player>), naming the server it
// is connected to, and, when it is seated, its seat's (c:player:<player>),
// naming its room's server. It returns how many claims it checked.
func (r *run) checkClaims(ctx context.Context, when string, timeout time.Duration) int {
	t := r.t
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out, err := r.p.Run(ctx, r.key, "docker", "compose", "exec", "-T", "redis", "sh", "-c",
			`for k in $(redis-cli --scan --pattern '*:c:*'); do echo "$k $(redis-cli get "$k")"; done`)
		held := map[string]string{} // conn:<player> or player:<player> → node
		for line := range strings.Lines(out) {
			f := strings.Fields(line)
			if len(f) == 2 {
				if i := strings.LastIndex(f[0], ":c:"); i >= 0 {
					held[f[0][i+len(":c:"):]] = f[1]
				}
			}
		}
		var missing []string
		n := 0
		check := func(key, want string) {
			n++
			if held[key] != want {
				missing = append(missing, fmt.Sprintf("%s on %s (claim: %q)", key, want, held[key]))
			}
		}
		for _, b := range r.ps.running() {
			rep := b.Report()
			check("conn:"+rep.Player, rep.Node())
			if rm, ok := rep.Room(); ok {
				check("player:"+rep.Player, rm.Node)
			}
		}
		if err == nil && len(missing) == 0 {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: after %v Redis lacks %d of %d claims (%v): %s", when, timeout, len(missing), n, err, strings.Join(missing, "; "))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// kill is step 5: docker kill -s KILL on the server where two bots play a
// match: it exits 137, its node is out of every other server's view within
// 3 heartbeats of its exit, and its players are back in a match on another
// server.
func (r *run) kill(ctx context.Context) {
	t := r.t
	t.Helper()
	victims := []*bot.Bot{
		r.ps.start(t, "kill-victim-0", bot.Config{Style: bot.StyleRandom}),
		r.ps.start(t, "kill-victim-1", bot.Config{Style: bot.StyleRandom}),
	}
	for _, b := range victims {
		b.Queue("duel")
	}
	waitAll(t, 30*time.Second, "victims matched", victims, seated)
	rm, _ := victims[0].Report().Room()
	i := slices.IndexFunc(r.servers, func(s server) bool { return s.Node == rm.Node })
	if i < 0 {
		t.Fatalf("the victims' room is on %s, not one of %v", rm.Node, nodes(r.servers))
	}
	k := r.servers[i]
	others := slices.Delete(slices.Clone(r.servers), i, i+1)

	start := time.Now()
	r.p.Must(ctx, r.key, strings.Replace(cmdKill, "<container>", k.Container, 1))
	// Out of every other server's view.
	// lastSeen is when a request began whose answer still listed it: the
	// server still had it in view then (or after).
	var out, lastSeen time.Duration
	for {
		seen := false
		for _, s := range others {
			asked := time.Since(start)
			vctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			ns, err := view(vctx, r.client, s)
			cancel()
			if err != nil || slices.ContainsFunc(ns, func(n dashboard.Node) bool { return n.ID == k.Node }) {
				seen, lastSeen = true, asked
			}
		}
		if !seen {
			out = time.Since(start)
			break
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("%s (%s) is still in a view a minute after the kill", k.Name, k.Node)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
	x, err := r.events.Exit(ectx, k.Container)
	cancel()
	if err != nil || x.Code != 137 {
		t.Fatalf("%s: exit %+v (%v), want 137 (SIGKILL)", k.Name, x, err)
	}
	// The server died when the engine saw it exit, not when the docker
	// command began: on a loaded machine the command takes a second or
	// two to get there, and the server heartbeats meanwhile. (The engine
	// sees the exit a little after it, so this errs towards too little.)
	died := x.At.Sub(start)
	if lastSeen-died > 3*heartbeat {
		t.Errorf("%s was still in a view %v after it died (%v after the kill command; out of all after %v), want out within 3 heartbeats (%v)",
			k.Node, lastSeen-died, lastSeen, out, 3*heartbeat)
	}

	// The victims come back and queue again, as people would once their
	// page says the match is gone; they play on a live server.
	waitAll(t, 30*time.Second, "victims reconnected", victims, func(rep bot.Report) bool {
		_, ok := rep.Room()
		return len(rep.Drops) > 0 && !ok && rep.Node() != k.Node
	})
	back := time.Since(start)
	for _, b := range victims {
		b.Queue("duel")
	}
	waitAll(t, 30*time.Second, "victims matched again", victims, func(rep bot.Report) bool {
		rm, ok := rep.Room()
		return ok && rm.Node != k.Node
	})
	// docker kill is a stop for restart: unless-stopped, so the engine
	// leaves the container exited: the two others are the fleet.
	f := waitFleet(t, r.p, r.client, 2, r.port)
	if !slices.Equal(nodes(f.servers), nodes(others)) {
		t.Errorf("after the kill the servers are %v, want %v", nodes(f.servers), nodes(others))
	}
	r.servers = f.servers
	r.record("5 kill -s KILL", "killed server out of every view after its exit (3 heartbeats = 6s), after the kill command; exit code",
		fmt.Sprintf("%v, %v; %d", (out-died).Round(10*time.Millisecond), out.Round(10*time.Millisecond), x.Code))
	r.record("5 kill -s KILL", "its players connected elsewhere / the 2 others see only each other",
		fmt.Sprintf("%v / %v", back.Round(100*time.Millisecond), f.readyAt.Sub(start).Round(100*time.Millisecond)))
}
