package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/muster-gg/muster/examples/duel/bot"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/matchmaking"
)

// duelPlaylist is the duel example's playlist of one-on-one matches.
var duelPlaylist = matchmaking.Playlist{Name: "duel"}

// TestFleet runs the acceptance scenarios of the duel fleet, one subtest
// each, against one cluster: redis-server, three servers on 127.0.0.2-4
// and nginx on 127.0.0.1. Every player goes through nginx. A subtest that
// drains or kills a server leaves the slot to the next, which starts a
// new server there first.
func TestFleet(t *testing.T) {
	c := startCluster(t)
	for _, sc := range []struct {
		name string
		run  func(*testing.T, *cluster)
	}{
		{"queue", testQueue},
		{"lobby", testLobby},
		{"rejoin", testRejoin},
		{"drain", testDrain},
		{"kill", testKill},
		{"metrics", testMetrics},
		{"operator", testOperatorOnly},
	} {
		t.Run(sc.name, func(t *testing.T) {
			c.Ensure(t)
			sc.run(t, c)
			c.leave(t)
		})
	}
}

func seated(r bot.Report) bool { _, ok := r.Room(); return ok }

// seatedSince is true once the bot is seated in a room it got after t0.
func seatedSince(t0 time.Time) func(bot.Report) bool {
	return func(r bot.Report) bool {
		rm, ok := r.Room()
		return ok && rm.Started.After(t0)
	}
}

// checkConnected fails the test for every bot that was ever without a
// working connection.
func checkConnected(t *testing.T, bots []*bot.Bot) {
	t.Helper()
	for _, b := range bots {
		if r := b.Report(); !r.AlwaysConnected() {
			t.Errorf("%s was without a working connection: failures %+v, drops %+v", r.Player, r.Failures, r.Drops)
		}
	}
}

// 40 bots queue for duel through nginx: all are matched, every room runs
// on the server where duel gathers, and no bot is ever without a working
// connection.
func testQueue(t *testing.T, c *cluster) {
	g := c.Gather(t, duelPlaylist)
	const n = 40
	bots := make([]*bot.Bot, n)
	for i := range bots {
		bots[i] = c.player(t, fmt.Sprintf("queue-%02d", i), bot.Config{})
	}
	for _, b := range bots {
		b.Queue("duel")
	}
	waitAll(t, 30*time.Second, "matched", bots, seated)

	rooms := map[string][]string{}
	var queued []time.Duration
	redirected := 0
	first := map[string]int{}
	for _, b := range bots {
		r := b.Report()
		rm, _ := r.Room()
		rooms[rm.Node+"/"+rm.ID] = append(rooms[rm.Node+"/"+rm.ID], r.Player)
		queued = append(queued, rm.Queued)
		first[r.Nodes[0]]++
		if rm.Node != g.ID {
			t.Errorf("%s: room %s on %s, want the gather server %s", r.Player, rm.ID, rm.Node, g.ID)
		}
		if r.Requeues > 0 {
			t.Errorf("%s queued %d more times by itself", r.Player, r.Requeues)
		}
		for _, rd := range r.Redirects {
			if rd.Reason != "queue" || rd.To != g.ID {
				t.Errorf("%s: redirect %+v, want only reason queue to %s", r.Player, rd, g.ID)
			}
		}
		if len(r.Redirects) > 0 {
			redirected++
		}
	}
	checkConnected(t, bots)
	if len(rooms) != n/2 {
		t.Errorf("%d rooms, want %d", len(rooms), n/2)
	}
	for id, ps := range rooms {
		if len(ps) != 2 {
			t.Errorf("room %s seats %v, want 2 players", id, ps)
		}
	}
	t.Logf("40 bots matched into %d rooms on %s; first connections by server %v; %d redirected to gather; queue to seat: %s",
		len(rooms), g.ID, first, redirected, bot.Quantiles(queued))
}

// A lobby created through nginx is joined by code by three other bots
// through nginx, wherever round robin put them; its match has all four.
func testLobby(t *testing.T, c *cluster) {
	host := c.player(t, "lobby-host", bot.Config{Style: bot.StyleRandom})
	host.CreateLobby()
	waitAll(t, 10*time.Second, "lobby created", []*bot.Bot{host}, func(r bot.Report) bool { return r.Lobby.Code != "" })
	lb := host.Report().Lobby
	home := lb.Node
	if home == "" {
		home = host.Report().Node()
	}
	start := time.Now()
	all := []*bot.Bot{host}
	for i := range 3 {
		m := c.player(t, fmt.Sprintf("lobby-member-%d", i), bot.Config{Style: bot.StyleRandom})
		m.JoinLobby(lb.Code)
		all = append(all, m)
	}
	full := func(r bot.Report) bool { return r.Lobby.Code == lb.Code && len(r.Lobby.Members) == 4 }
	waitAll(t, 15*time.Second, "joined lobby "+lb.Code, all, full)
	joined := time.Since(start)
	host.StartLobby()
	waitAll(t, 10*time.Second, "lobby match", all, seated)

	var room string
	viaRedirect := 0
	for _, b := range all {
		r := b.Report()
		rm, _ := r.Room()
		if room == "" {
			room = rm.ID
		}
		if rm.ID != room || rm.Node != home {
			t.Errorf("%s: room %s on %s, want %s on the lobby's server %s", r.Player, rm.ID, rm.Node, room, home)
		}
		if r.Node() != home {
			t.Errorf("%s is on %s, want the lobby's server %s", r.Player, r.Node(), home)
		}
		for _, rd := range r.Redirects {
			if rd.Reason == "lobby" {
				viaRedirect++
			}
		}
	}
	checkConnected(t, all)
	t.Logf("lobby %s on %s: 3 members joined in %v (%d through a lobby redirect), match %s",
		lb.Code, home, joined.Round(time.Millisecond), viaRedirect, room)
}

// A bot that drops mid-match and reconnects through nginx is back in its
// room: one that names the server it was on, and one that names none and
// is sent there by whichever server nginx picked.
func testRejoin(t *testing.T, c *cluster) {
	named := c.player(t, "rejoin-named", bot.Config{Style: bot.StyleRandom})
	anywhere := c.player(t, "rejoin-anywhere", bot.Config{Style: bot.StyleRandom, Anywhere: true})
	both := []*bot.Bot{named, anywhere}
	for _, b := range both {
		b.Queue("duel")
	}
	midMatch := func(r bot.Report) bool { rm, ok := r.Room(); return ok && rm.Snapshots >= 20 }
	waitAll(t, 15*time.Second, "a second into a match", both, midMatch)
	room, _ := named.Report().Room()

	var figures []string
	for _, b := range both {
		b.Drop()
		waitAll(t, 10*time.Second, "back in the room", []*bot.Bot{b}, func(r bot.Report) bool { return len(r.Rejoins) > 0 })
		r := b.Report()
		rj := r.Rejoins[0]
		rm, ok := r.Room()
		if rj.Room != room.ID || !ok || rm.ID != room.ID {
			t.Errorf("%s: rejoined %+v, seated in %+v; want room %s", r.Player, rj, rm, room.ID)
		}
		if len(r.Failures) > 0 {
			t.Errorf("%s: failed attempts %+v", r.Player, r.Failures)
		}
		// The figure is 1 s; a local round trip takes milliseconds,
		// so a second is a bound that only a real fault exceeds.
		if rj.Took > time.Second {
			t.Errorf("%s: back in room %s after %v, want within 1s", r.Player, rj.Room, rj.Took)
		}
		figures = append(figures, fmt.Sprintf("%s %v over %d connection(s)", r.Player, rj.Took.Round(100*time.Microsecond), rj.Connections))
	}
	t.Logf("dropped mid-match in %s on %s, back in the room: %s", room.ID, room.Node, strings.Join(figures, "; "))
}

// SIGTERM to the gather server while a bot waits there and two matches
// run: the waiting bot is redirected (reason drain) with the time it had
// waited and matched elsewhere, the matches play to their end, and the
// process exits 0 before the drain timeout.
func testDrain(t *testing.T, c *cluster) {
	g := c.Gather(t, duelPlaylist)
	var players []*bot.Bot
	for i := range 4 {
		players = append(players, c.player(t, fmt.Sprintf("drain-player-%d", i), bot.Config{Matches: 1}))
	}
	for _, b := range players {
		b.Queue("duel")
	}
	waitAll(t, 20*time.Second, "matched on the gather server", players, seated)
	rooms := map[string]bool{}
	for _, b := range players {
		rm, _ := b.Report().Room()
		rooms[rm.ID] = true
		if rm.Node != g.ID {
			t.Fatalf("%s: room on %s, want the gather server %s", b.Report().Player, rm.Node, g.ID)
		}
	}

	waiter := c.player(t, "drain-waiter", bot.Config{})
	queuedAt := time.Now()
	waiter.Queue("duel")
	waitAll(t, 10*time.Second, "waiting on the gather server", []*bot.Bot{waiter}, func(r bot.Report) bool {
		n := len(r.Waits)
		return n > 0 && r.Waits[n-1].Node == g.ID && r.Node() == g.ID
	})

	sigterm := time.Now()
	if err := g.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	movedWait := func(r bot.Report) bool {
		n := len(r.Waits)
		return n > 0 && r.Waits[n-1].Node != g.ID && r.Waits[n-1].At.After(sigterm)
	}
	waitAll(t, 10*time.Second, "moved by the drain", []*bot.Bot{waiter}, movedWait)
	wr := waiter.Report()
	moved := wr.Waits[len(wr.Waits)-1]
	var drainRedirect *bot.Redirect
	for i, rd := range wr.Redirects {
		if rd.From == g.ID && rd.At.After(sigterm) {
			drainRedirect = &wr.Redirects[i]
		}
	}
	if drainRedirect == nil || drainRedirect.Reason != "drain" || drainRedirect.To != moved.Node {
		t.Errorf("waiting bot's redirects %+v: want one from %s, reason drain, to %s", wr.Redirects, g.ID, moved.Node)
	}
	if least := sigterm.Sub(queuedAt) - 200*time.Millisecond; moved.Waited < least {
		t.Errorf("waited %v on arrival at %s, want at least %v (queued %v before the SIGTERM)", moved.Waited, moved.Node, least, sigterm.Sub(queuedAt))
	}

	partner := c.player(t, "drain-partner", bot.Config{})
	partner.Queue("duel")
	pair := []*bot.Bot{waiter, partner}
	waitAll(t, 15*time.Second, "waiting bot matched elsewhere", pair, seated)
	wroom, _ := waiter.Report().Room()
	proom, _ := partner.Report().Room()
	if wroom.ID != proom.ID || wroom.Node != proom.Node || wroom.Node == g.ID {
		t.Errorf("waiter in %s on %s, partner in %s on %s: want one room off %s", wroom.ID, wroom.Node, proom.ID, proom.Node, g.ID)
	}

	waitAll(t, drainTimeout, "matches on the draining server ended", players, func(r bot.Report) bool { return r.Ended() >= 1 })
	for _, b := range players {
		r := b.Report()
		rm := r.Rooms[0]
		if !strings.HasPrefix(rm.Reason, "won by ") {
			t.Errorf("%s: room %s ended with %q, want it played to its end", r.Player, rm.ID, rm.Reason)
		}
	}
	select {
	case <-g.Exited():
	case <-time.After(time.Until(sigterm.Add(drainTimeout + 5*time.Second))):
		t.Fatalf("%s still runs %v after SIGTERM", g.ID, time.Since(sigterm).Round(time.Millisecond))
	}
	took := g.ExitAt().Sub(sigterm)
	if code := g.ExitCode(); code != 0 {
		t.Errorf("%s exited with %d (%v), want 0", g.ID, code, g.Err())
	}
	if took >= drainTimeout {
		t.Errorf("%s exited %v after SIGTERM, want before the drain timeout %v", g.ID, took, drainTimeout)
	}
	checkConnected(t, players)
	for _, b := range pair {
		r := b.Report()
		if len(r.Failures) > 0 {
			t.Errorf("%s: failed connection attempts %+v", r.Player, r.Failures)
		}
		for _, d := range r.Drops {
			// nginx may have given the bot's connection to the draining
			// server, which relayed it: it ends when that server exits
			// ("server closing"), and the bot comes straight back.
			if d.Reason != "server closing" {
				t.Errorf("%s: dropped %+v", r.Player, d)
			}
			t.Logf("%s: its connection, relayed through %s, ended with it (%d %s); rejoins %+v", r.Player, g.ID, d.Code, d.Reason, r.Rejoins)
		}
		for _, rm := range r.Rooms {
			if rm.Reason == "lost" {
				t.Errorf("%s lost its room %s", r.Player, rm.ID)
			}
		}
	}
	var lengths []string
	for _, b := range players {
		rm := b.Report().Rooms[0]
		lengths = append(lengths, rm.Ended.Sub(rm.Started).Round(100*time.Millisecond).String())
	}
	t.Logf("drain of %s: waiting bot moved to %s with %v waited (%v after the SIGTERM), matched with a newcomer; %d matches played to the end (%s); exit 0 after %v (timeout %v)",
		g.ID, moved.Node, moved.Waited.Round(time.Millisecond), moved.At.Sub(sigterm).Round(time.Millisecond),
		len(rooms), strings.Join(lengths, ", "), took.Round(time.Millisecond), drainTimeout)
}

// SIGKILL to the gather server in the middle of a match: once 3
// heartbeats have passed, no bot is sent to it; newcomers and the players
// of its lost match, who reconnect through nginx, are matched on the
// server where duel gathers now.
func testKill(t *testing.T, c *cluster) {
	k := c.Gather(t, duelPlaylist)
	var victims []*bot.Bot
	for i := range 2 {
		victims = append(victims, c.player(t, fmt.Sprintf("kill-victim-%d", i), bot.Config{Style: bot.StyleRandom}))
	}
	for _, b := range victims {
		b.Queue("duel")
	}
	waitAll(t, 15*time.Second, "matched on the gather server", victims, seated)

	killed := time.Now()
	k.Kill(syscall.SIGKILL)
	gone := c.watchGone(k.ID, killed)
	after := killed.Add(3 * heartbeat)
	time.Sleep(time.Until(after))

	var newcomers []*bot.Bot
	for i := range 10 {
		b := c.player(t, fmt.Sprintf("kill-newcomer-%d", i), bot.Config{})
		b.Queue("duel")
		newcomers = append(newcomers, b)
	}
	// The players of the lost match come back and queue again, as people
	// would once their page says they are not in a match any more.
	waitAll(t, 10*time.Second, "reconnected after the kill", victims, func(r bot.Report) bool {
		_, ok := r.Room()
		return len(r.Drops) > 0 && !ok
	})
	for _, b := range victims {
		b.Queue("duel")
	}
	all := append(slices.Clone(newcomers), victims...)
	waitAll(t, 20*time.Second, "matched after the kill", all, seatedSince(after))
	g := c.Gather(t, duelPlaylist)

	// A redirect decided just before the 3 heartbeats were up may reach
	// its bot just after: allow it 100 ms in flight.
	checkFrom := after.Add(100 * time.Millisecond)
	bounces := 0
	for _, b := range all {
		r := b.Report()
		for _, e := range r.Events {
			switch {
			case e.At.Before(checkFrom):
			case e.Kind == "welcome" && e.Node == k.ID:
				t.Errorf("%s was welcomed by the killed %s at +%v", r.Player, k.ID, e.At.Sub(killed))
			case e.Kind == "redirect" && strings.Contains(e.Detail, "to "+k.ID+" "):
				t.Errorf("%s was sent to the killed %s at +%v", r.Player, k.ID, e.At.Sub(killed))
			}
			if e.Kind == "bounce" {
				bounces++
			}
		}
		rm, _ := r.Room()
		if rm.Node != g.ID {
			t.Errorf("%s: room on %s, want the gather server %s", r.Player, rm.Node, g.ID)
		}
		for _, f := range r.Failures {
			// A request in flight to the server as it died may fail; once
			// the fleet has noticed, none may.
			if f.At.After(after) {
				t.Errorf("%s: failed connection attempt %+v", r.Player, f)
			}
		}
	}
	checkConnected(t, newcomers)
	var back []time.Duration
	for _, b := range victims {
		if rc := b.Report().Reconnects; len(rc) > 0 {
			back = append(back, rc[0].Took)
		}
	}
	t.Logf("SIGKILL of %s: gone from every view after %v (3 heartbeats = %v); its players had a working connection again after %s (%d bounces before it was gone); 12 bots matched on %s",
		k.ID, gone(), 3*heartbeat, bot.Quantiles(back), bounces, g.ID)
}

// waitIdle waits until nobody is seated on s (the load of the duel is its
// seated players): a room left over by an earlier subtest would hold a
// drain until its timeout.
func (c *cluster) waitIdle(t *testing.T, s *server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	var last fleet.Capacity
	for {
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		cp, err := c.Capacity(rctx, s)
		rcancel()
		if err == nil {
			last = cp
			if cp.Load == 0 {
				if d := time.Since(start); d > 1500*time.Millisecond { // more than the host's load report period
					t.Logf("%s had players seated for another %v", s.ID, d.Round(time.Millisecond))
				}
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("%s still has players seated after 5s: %+v (last error %v)", s.ID, last, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// watchGone polls the running servers until none lists id, and returns a
// function that waits for that and returns the time it took from since.
func (c *cluster) watchGone(id string, since time.Time) func() time.Duration {
	var (
		once sync.Once
		took time.Duration
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for ctx.Err() == nil {
			seen := false
			for _, s := range c.Running() {
				if s.ID == id {
					continue
				}
				cp, err := c.Capacity(ctx, s)
				if err != nil || cp.Nodes != len(hosts)-1 {
					seen = true
				}
			}
			if !seen {
				took = time.Since(since)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		took = -1
	}()
	return func() time.Duration {
		once.Do(func() { <-done })
		return took.Round(10 * time.Millisecond)
	}
}

// The Kubernetes HPA scales on muster_server_load: every server must
// export it on /metrics.
func testMetrics(t *testing.T, c *cluster) {
	s := c.Running()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	code, body, err := c.Get(ctx, s, "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if code == 404 {
		t.Skip("the example does not serve /metrics yet")
	}
	if code != 200 || !strings.Contains(string(body), "\nmuster_server_load ") {
		t.Errorf("/metrics: %d, no muster_server_load:\n%.500s", code, body)
	}
}

// The probes, the drain, /metrics and the dashboard are for operators, on
// each server's own address: through nginx, the fleet's public address,
// every one of them is refused, while the game's own paths are served.
func testOperatorOnly(t *testing.T, c *cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	base, err := url.Parse(c.URL)
	if err != nil {
		t.Fatal(err)
	}
	// fetch sends path as written, not cleaned: nginx must refuse a path
	// that only its normalisation turns into an operator's.
	fetch := func(method, path string) int {
		u := *base
		if u.Path, err = url.PathUnescape(path); err != nil {
			t.Fatal(err)
		}
		u.RawPath = path
		req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, p := range []struct{ method, path string }{
		{http.MethodGet, "/metrics"},
		{http.MethodGet, "/muster/dashboard"},
		{http.MethodGet, "/muster/dashboard/nodes"},
		{http.MethodGet, "/muster/server/ready"},
		{http.MethodGet, "/muster/server/live"},
		{http.MethodGet, "/muster/server/capacity"},
		{http.MethodPost, "/muster/server/drain"},
		{http.MethodGet, "/MUSTER/dashboard"},
		{http.MethodGet, "/metrics/"},
		{http.MethodGet, "//metrics"},
		{http.MethodGet, "/./metrics"},
		{http.MethodGet, "/muster/../metrics"},
		{http.MethodGet, "/%6Detrics"},
		{http.MethodGet, "/%6Duster/dashboard"},
		{http.MethodGet, "/x/..//muster/server/ready"},
	} {
		if code := fetch(p.method, p.path); code != http.StatusForbidden && code != http.StatusNotFound {
			t.Errorf("%s %s through nginx: %d, want 403 or 404", p.method, p.path, code)
		}
	}
	if code := fetch(http.MethodGet, "/"); code != http.StatusOK {
		t.Errorf("GET / through nginx: %d, want the game's page", code)
	}
}
