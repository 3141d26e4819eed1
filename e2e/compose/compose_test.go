package compose

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/examples/duel/bot"
	"github.com/muster-gg/muster/internal/testkit/dockertest"
	"github.com/muster-gg/muster/internal/testkit/fleetproc"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// The commands of the README's Docker section, as this test runs them
// (TestComposeReadme checks that the README shows each). <container> is a
// game container's name or id.
const (
	cmdKey       = "export MUSTER_KEY=$(openssl rand -hex 32)"
	cmdBuild     = "docker compose build"
	cmdUp        = "docker compose up -d --build --scale game=5"
	cmdScaleDown = "docker compose up -d --scale game=3"
	cmdRestart   = "docker compose restart redis"
	cmdKill      = "docker kill -s KILL <container>"
	cmdDown      = "docker compose down"
)

// The refusal docker-compose.yml makes without MUSTER_KEY.
const keyRefusal = "set MUSTER_KEY to a random secret of at least 16 bytes (openssl rand -hex 32)"

// The fleet's heartbeat: config.yml's default, which docker-compose.yml
// keeps.
const heartbeat = 2 * time.Second

// figure is one measured figure of the scenario, logged at the end for
// RELIABILITY.md's "containers" table.
type figure struct{ step, what, value string }

// TestComposeScale runs docker-compose.yml as the README tells users, on
// this machine's Docker engine, with local stand-ins for the official
// base images (the steps, in this order): 7. refused without
// MUSTER_KEY; 1. five servers that see each other behind nginx; 2. 40 bots
// playing through nginx's published port; 3. scaled down to 3 while they
// play; 4. Redis restarted; 5. a server killed; 6. down leaves nothing of
// the project. The figures are logged at the end, as the rows of
// RELIABILITY.md's "containers" table.
func TestComposeScale(t *testing.T) {
	root := moduleRoot(t)
	images := dockertest.BaseImages(t, root)
	p := dockertest.NewProject(t, "muster-compose-", root)
	image := "muster-duel-test:" + p.Name
	port := testbin.FreePort(t, "127.0.0.1")
	p.Setenv(images.Env()...)
	p.Setenv("MUSTER_PORT=127.0.0.1:"+strconv.Itoa(port), "MUSTER_IMAGE="+image)
	p.RemoveImage(image)
	key := []string{"MUSTER_KEY=" + rand.Text()}
	client := &http.Client{Timeout: 5 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	var figures []figure
	t.Cleanup(func() {
		var lines []string
		for _, f := range figures {
			lines = append(lines, fmt.Sprintf("| %s | %s | %s |", f.step, f.what, f.value))
		}
		t.Logf("containers:\n%s", strings.Join(lines, "\n"))
	})
	record := func(step, what, value string) { figures = append(figures, figure{step, what, value}) }

	// 7. Without MUSTER_KEY compose refuses, with the documented line,
	// and creates nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	out, err := p.Run(ctx, nil, strings.Fields(cmdUp)...)
	if err == nil || !strings.Contains(out, keyRefusal) {
		t.Fatalf("%s without MUSTER_KEY: %v, output:\n%s\nwant a refusal naming %q", cmdUp, err, out, keyRefusal)
	}
	if left, err := p.Leftovers(ctx); err != nil || len(left) > 0 {
		t.Fatalf("after the refusal the project has %v (%v), want nothing", left, err)
	}

	// The image is built before the test takes its turn among the fleet
	// suites: building takes long and needs no quiet machine.
	start := time.Now()
	p.Must(ctx, key, cmdBuild)
	t.Logf("%s: %v", cmdBuild, time.Since(start).Round(time.Second))
	fleetproc.TakeTurn(t)
	events := p.Watch(t)

	// 1. Five servers: each sees the other four within a heartbeat of the
	// last one's start, and nginx answers.
	start = time.Now()
	// The fleet is watched while the command runs, so that each server's
	// readiness is seen when it comes, not when the command returns.
	type result struct {
		out  string
		err  error
		took time.Duration
	}
	upDone := make(chan result, 1)
	go func() {
		out, err := p.Run(ctx, key, strings.Fields(cmdUp)...)
		upDone <- result{out, err, time.Since(start)}
	}()
	fleet5 := waitFleet(t, p, client, 5, port)
	up := <-upDone
	if up.err != nil {
		t.Fatalf("%v\n%s", up.err, up.out)
	}
	upTook := up.took
	record("1 up --scale game=5", "time to a ready fleet (the command, then all 5 see each other and nginx answers)",
		fmt.Sprintf("%v (%v the command)", fleet5.readyAt.Sub(start).Round(100*time.Millisecond), upTook.Round(100*time.Millisecond)))
	record("1 up --scale game=5", "last server's start → every server lists all 5",
		fmt.Sprintf("%v, seen within %v (heartbeat %v)", fleet5.formed.Round(10*time.Millisecond), fleet5.lag.Round(10*time.Millisecond), heartbeat))
	if fleet5.formed-fleet5.lag > heartbeat {
		t.Errorf("the servers listed each other %v after the last one started (seen within %v), want within one heartbeat (%v)", fleet5.formed, fleet5.lag, heartbeat)
	}

	// 2. 40 bots play through nginx: 20 queue for duel, 20 play in 5
	// lobbies of 4, which live where round robin put their hosts.
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
	ps := newPlayers(t, url)
	rooms := play40(t, ps)
	record("2 40 bots", "servers running matches", strconv.Itoa(len(rooms)))

	r := &run{t: t, p: p, client: client, port: port, key: key, events: events, ps: ps, servers: fleet5.servers, logs: followAll(t, p, fleet5.servers), record: record}
	// 3. Scale down to 3 while they play.
	r.scaleDown(ctx)
	// 4. Restart Redis.
	r.restartRedis(ctx)
	// 5. Kill a server.
	r.kill(ctx)

	// 6. down leaves nothing of the project.
	ps.stopAll(t)
	p.Must(ctx, key, cmdDown)
	left, err := p.Leftovers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("after %s the project still has %v", cmdDown, left)
	}
}

// formed is a fleet all of whose servers see each other.
type formed struct {
	servers []server
	// readyAt is when every server saw the others ready and nginx
	// answered.
	readyAt time.Time
	// formed is the time from the last server's start (its first answer)
	// to every server listing all the others, as observed; the listing
	// was complete up to lag (the observing round's length) earlier.
	formed, lag time.Duration
}

// waitFleet waits up to 2 minutes until n game containers run, every one
// lists all n, all ready, and nginx on port serves the game's page.
func waitFleet(t *testing.T, p *dockertest.Project, client *http.Client, n, port int) formed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	up := map[string]bool{} // by container: answered once
	var lastUp, allListed time.Time
	var lag time.Duration
	var last []string
	for {
		round := time.Now()
		ss, err := servers(ctx, p, client)
		for _, s := range ss {
			if !up[s.Container] {
				up[s.Container], lastUp = true, time.Now()
			}
		}
		if err == nil && len(ss) == n {
			listed, ready, seen := sees(ctx, client, ss)
			last = seen
			if listed && allListed.IsZero() {
				allListed = time.Now()
				lag = allListed.Sub(round)
			}
			if ready && nginxAnswers(ctx, client, port) {
				return formed{servers: ss, readyAt: time.Now(), formed: allListed.Sub(lastUp), lag: lag}
			}
		} else {
			last = []string{fmt.Sprintf("%d game servers answering (%v)", len(ss), err)}
		}
		if ctx.Err() != nil {
			t.Fatalf("no fleet of %d after 2 minutes:\n%s", n, strings.Join(last, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nginxAnswers reports whether nginx on port serves the game's page.
func nginxAnswers(ctx context.Context, client *http.Client, port int) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/", nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// play40 has 40 bots play through nginx: 20 queue for duel (their rooms
// run where duel gathers), and 5 hosts create lobbies (where nginx's round
// robin put them) that 3 more bots each join by code and start. A host
// whose lobby lands where matches already run, while they run on fewer
// than 3 servers, leaves, and another bot hosts in its place (nginx's
// workers each keep their own round robin, so hosts may meet the same
// server). It checks that all were seated, in rooms of the right size, on
// at least 3 servers, and returns the rooms by server.
func play40(t *testing.T, ps *players) map[string][]string {
	t.Helper()
	var queued []*bot.Bot
	for i := range 20 {
		b := ps.start(t, fmt.Sprintf("queue-%02d", i), bot.Config{})
		b.Queue("duel")
		queued = append(queued, b)
	}
	waitAll(t, 60*time.Second, "queued bots seated", queued, seated)
	rm, _ := queued[0].Report().Room()
	used := map[string]bool{rm.Node: true}
	var hosts, lobbyBots []*bot.Bot
	for try := 0; len(hosts) < 5; try++ {
		h := ps.start(t, fmt.Sprintf("lobby-%d-host", try), bot.Config{Style: bot.StyleRandom})
		h.CreateLobby()
		waitAll(t, 30*time.Second, "lobby created", []*bot.Bot{h}, func(r bot.Report) bool { return r.Lobby.Code != "" })
		node := h.Report().Lobby.Node
		if node == "" {
			node = h.Report().Node()
		}
		if used[node] && len(used) < 3 && try < 20 {
			ps.stop(t, h)
			continue
		}
		used[node] = true
		hosts = append(hosts, h)
	}
	lobbyNodes := map[string]bool{}
	for i, h := range hosts {
		lb := h.Report().Lobby
		lobbyNodes[lb.Node] = true
		members := []*bot.Bot{h}
		for j := range 3 {
			m := ps.start(t, fmt.Sprintf("lobby-%d-member-%d", i, j), bot.Config{Style: bot.StyleRandom})
			m.JoinLobby(lb.Code)
			members = append(members, m)
		}
		full := func(r bot.Report) bool { return r.Lobby.Code == lb.Code && len(r.Lobby.Members) == 4 }
		waitAll(t, 30*time.Second, "joined lobby "+lb.Code, members, full)
		h.StartLobby()
		lobbyBots = append(lobbyBots, members...)
	}
	all := append(slices.Clone(queued), lobbyBots...)
	// A duel lasts seconds: on a starved machine the first may end before
	// the last lobby starts, and its bots play no more. Each bot's first
	// room is the one counted.
	waitAll(t, 60*time.Second, "seated", all, func(r bot.Report) bool { return len(r.Rooms) > 0 })

	seats := map[string][]string{} // room (node/id) → players
	byNode := map[string][]string{}
	for _, b := range all {
		r := b.Report()
		rm := r.Rooms[0]
		key := rm.Node + "/" + rm.ID
		if len(seats[key]) == 0 {
			byNode[rm.Node] = append(byNode[rm.Node], rm.ID)
		}
		seats[key] = append(seats[key], r.Player)
	}
	for room, who := range seats {
		want := 2
		if strings.HasPrefix(who[0], "lobby-") {
			want = 4
		}
		if len(who) != want {
			t.Errorf("room %s seats %v, want %d players", room, who, want)
		}
	}
	if len(byNode) < 3 {
		t.Errorf("matches run on %d servers (%v), want at least 3", len(byNode), byNode)
	}
	t.Logf("40 bots seated in %d rooms on %d servers (lobbies on %d): %v", len(seats), len(byNode), len(lobbyNodes), byNode)
	return byNode
}

// moduleRoot returns the module's root, where docker-compose.yml is.
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "docker-compose.yml")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	return dir
}

// TestComposeImages builds the local base images when this machine has
// none yet, so that .ci/run can build them beside its other steps.
func TestComposeImages(t *testing.T) {
	im := dockertest.BaseImages(t, moduleRoot(t))
	t.Logf("base images: %+v", im)
}

// shownLogLines is how much of each server's log a failed test shows.
const shownLogLines = 200

// followAll follows the logs of servers ss, by container, and shows the
// end of each when t fails: what the servers did next to what the bots
// saw.
func followAll(t *testing.T, p *dockertest.Project, ss []server) map[string]func() string {
	logs := map[string]func() string{}
	for _, s := range ss {
		logs[s.Container] = p.Follow(t, s.Container)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, s := range ss {
			lines := strings.Split(strings.TrimSpace(logs[s.Container]()), "\n")
			t.Logf("%s (%s), the last %d lines of its log:\n%s", s.Name, s.Node, shownLogLines, strings.Join(lines[max(len(lines)-shownLogLines, 0):], "\n"))
		}
	})
	return logs
}
