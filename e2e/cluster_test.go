package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/examples/duel/bot"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testbin"
	"github.com/muster-gg/muster/matchmaking"
)

// The fleet's settings: a short heartbeat so that a dead server is gone
// quickly, and a drain timeout above a chasing match's length.
const (
	heartbeat    = 500 * time.Millisecond
	drainTimeout = 30 * time.Second
	duelPkg      = "./examples/duel"
)

// The loopback addresses of the three servers.
var hosts = []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}

var (
	buildDir  string // removed by TestMain
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "muster-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// root returns the module's root directory.
func root(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	return dir
}

// buildDuel builds the example once per test process, with the race
// detector when the tests have it.
func buildDuel(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		buildBin = filepath.Join(buildDir, "duel")
		args := []string{"build", "-o", buildBin}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command(goBin, append(args, duelPkg)...)
		cmd.Dir = root(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build %s: %v\n%s", duelPkg, err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// cluster is a fleet of duel servers on loopback behind nginx.
type cluster struct {
	t       *testing.T
	root    string
	bin     string
	redis   *testbin.Redis
	key     string
	name    string // the fleet's cluster name
	ports   []int  // per slot
	nginx   *testbin.Nginx
	url     string // the one public address, nginx
	client  *http.Client
	mu      sync.Mutex
	slots   []*server
	started []*server // every server started, for the final checks
	seq     int
	players map[*testing.T][]*runner
}

// server is one duel process.
type server struct {
	id     string
	host   string
	addr   string
	cmd    *exec.Cmd
	out    *logBuffer
	exited chan struct{}
	err    error // cmd.Wait's, valid once exited is closed
	exitAt time.Time
}

// startCluster starts redis-server, three duel servers and nginx, and stops
// them when the test ends.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	testbin.Need(t, "redis-server")
	testbin.Need(t, "nginx")
	c := &cluster{
		t:     t,
		root:  root(t),
		bin:   buildDuel(t),
		redis: testbin.StartRedis(t),
		key:   rand.Text(),
		name:  "e2e-" + strings.ToLower(rand.Text()[:6]),
		slots: make([]*server, len(hosts)),
	}
	for _, h := range hosts {
		c.ports = append(c.ports, testbin.FreePort(t, h))
	}
	c.client = &http.Client{Transport: &http.Transport{
		MaxIdleConns: 200, MaxIdleConnsPerHost: 100, IdleConnTimeout: 10 * time.Second,
	}}
	t.Cleanup(c.stop)
	for i := range hosts {
		c.startServer(t, i)
	}
	c.waitView(t, len(hosts))

	var upstreams []string
	for i, h := range hosts {
		upstreams = append(upstreams, net.JoinHostPort(h, strconv.Itoa(c.ports[i])))
	}
	port := testbin.FreePort(t, "127.0.0.1")
	conf := renderNginx(t, c.root, port, upstreams)
	c.nginx = testbin.StartNginxConfig(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), func(string) string { return conf })
	c.url = "http://" + c.nginx.Addr + "/"
	return c
}

// renderNginx returns deploy/nginx-local.conf, the README's configuration,
// with port in place of its listening port and upstreams in place of its
// three servers. The file's paths are relative to nginx's -p directory.
func renderNginx(t testing.TB, root string, port int, upstreams []string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "deploy", "nginx-local.conf"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	replace := func(old, repl string) {
		if n := strings.Count(s, old); n != 1 {
			t.Fatalf("deploy/nginx-local.conf: %q appears %d times, want once", old, n)
		}
		s = strings.Replace(s, old, repl, 1)
	}
	replace("listen 127.0.0.1:8000;", fmt.Sprintf("listen 127.0.0.1:%d;", port))
	for i, h := range hosts {
		replace("server "+h+":8080;", "server "+upstreams[i]+";")
	}
	return s
}

// startServer starts a new duel server in slot i, on that slot's address,
// with a new node id, and waits until it is ready.
func (c *cluster) startServer(t *testing.T, i int) *server {
	t.Helper()
	c.mu.Lock()
	c.seq++
	s := &server{
		id:     fmt.Sprintf("duel-%d", c.seq),
		host:   hosts[i],
		addr:   net.JoinHostPort(hosts[i], strconv.Itoa(c.ports[i])),
		out:    &logBuffer{},
		exited: make(chan struct{}),
	}
	c.slots[i] = s
	c.started = append(c.started, s)
	c.mu.Unlock()

	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(strings.ToUpper(kv), "MUSTER__")
	})
	env = append(env, serverEnv(s.host, c.ports[i], s.id, s.addr, c.redis.Addr, c.name, c.key)...)
	s.cmd = exec.Command(c.bin, "-config", filepath.Join(c.root, "config.yml"))
	s.cmd.Dir = c.root
	s.cmd.Env = env
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	// Own process group, so that the cleanup reaches everything; killed
	// by the kernel if the test process dies.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that started the child exits:
		// keep this goroutine on its thread until the child is gone.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		s.err = s.cmd.Wait()
		s.exitAt = time.Now()
		close(s.exited)
	}()
	if err := <-started; err != nil {
		t.Fatalf("start %s: %v", s.id, err)
	}
	c.waitReady(t, s)
	return s
}

// serverEnv is the environment of a server: the configuration's real
// variable names (TestDeployEnvNames checks them against config.ApplyEnv).
func serverEnv(host string, port int, id, addr, redis, cluster, key string) []string {
	return []string{
		"MUSTER__SERVER__HTTP__HOST=" + host,
		"MUSTER__SERVER__HTTP__PORT=" + strconv.Itoa(port),
		"MUSTER__SERVER__HTTP__TRUSTED_PROXIES=127.0.0.1", // nginx
		"MUSTER__SERVER__FLEET__REDIS=" + redis,
		"MUSTER__SERVER__FLEET__CLUSTER=" + cluster,
		"MUSTER__SERVER__FLEET__NODE_ID=" + id,
		"MUSTER__SERVER__FLEET__INTERNAL_ADDRESS=" + addr,
		"MUSTER__SERVER__FLEET__HEARTBEAT=" + strconv.FormatFloat(heartbeat.Seconds(), 'f', -1, 64),
		"MUSTER__SERVER__DRAIN__TIMEOUT=" + strconv.FormatFloat(drainTimeout.Seconds(), 'f', -1, 64),
		"MUSTER__SECURITY__KEY=" + key,
	}
}

func (s *server) running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// exitCode returns the process's exit status, -1 when a signal ended it.
func (s *server) exitCode() int { return s.cmd.ProcessState.ExitCode() }

// kill kills the server's process group with sig.
func (s *server) kill(sig syscall.Signal) { _ = syscall.Kill(-s.cmd.Process.Pid, sig) }

// running returns the servers that run, by slot.
func (c *cluster) running() []*server {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*server
	for _, s := range c.slots {
		if s != nil && s.running() {
			out = append(out, s)
		}
	}
	return out
}

// byID returns the server with node id id.
func (c *cluster) byID(id string) *server {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.started {
		if s.id == id {
			return s
		}
	}
	return nil
}

// ensure restarts, with new node ids, the servers that a subtest drained
// or killed, so that every subtest starts with a fleet of three.
func (c *cluster) ensure(t *testing.T) {
	t.Helper()
	for i := range hosts {
		c.mu.Lock()
		s := c.slots[i]
		c.mu.Unlock()
		if s.running() {
			continue
		}
		c.startServer(t, i)
	}
	c.waitView(t, len(hosts))
}

// get fetches path from server s.
func (c *cluster) get(ctx context.Context, s *server, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.addr+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes(), err
}

func (c *cluster) capacity(ctx context.Context, s *server) (fleet.Capacity, error) {
	var cp fleet.Capacity
	code, body, err := c.get(ctx, s, fleet.PathCapacity)
	if err != nil {
		return cp, err
	}
	if code != http.StatusOK {
		return cp, fmt.Errorf("%s: %d", fleet.PathCapacity, code)
	}
	return cp, json.Unmarshal(body, &cp)
}

// waitReady waits until s answers its readiness probe with 200.
func (c *cluster) waitReady(t *testing.T, s *server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		code, _, err := c.get(ctx, s, fleet.PathReady)
		if err == nil && code == http.StatusOK {
			return
		}
		if !s.running() {
			t.Fatalf("%s exited before it was ready: %v\n%s", s.id, s.err, s.out)
		}
		if ctx.Err() != nil {
			t.Fatalf("%s not ready after 20s (last: %d %v)\n%s", s.id, code, err, s.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// view returns server s's view of the fleet, as its dashboard feed shows
// it.
func (c *cluster) view(ctx context.Context, s *server) ([]fleet.Node, error) {
	code, body, err := c.get(ctx, s, dashboard.PathNodes)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("%s: %d", dashboard.PathNodes, code)
	}
	var snap dashboard.Snapshot
	if err := json.Unmarshal(body, &snap); err != nil {
		return nil, err
	}
	var nodes []fleet.Node
	for _, n := range snap.Nodes {
		nodes = append(nodes, fleet.Node{ID: n.ID, State: n.State, Load: n.Load, MaxLoad: n.MaxLoad, Stats: n.Stats})
	}
	return nodes, nil
}

// waitView waits until every running server sees a fleet of n servers, all
// ready: then they all agree on where a queue gathers.
func (c *cluster) waitView(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		ok := true
		var last []string
		for _, s := range c.running() {
			nodes, err := c.view(ctx, s)
			last = append(last, fmt.Sprintf("%s sees %+v %v", s.id, nodes, err))
			if err != nil || len(nodes) != n || slices.ContainsFunc(nodes, func(nd fleet.Node) bool { return nd.State != fleet.StateReady }) {
				ok = false
			}
		}
		if ok {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the servers do not see a fleet of %d ready servers:\n%s", n, strings.Join(last, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gather returns the server where playlist gathers now, as every running
// server computes it from its view of the registry; it waits until they
// agree.
func (c *cluster) gather(t *testing.T, playlist string) *server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		var ids []string
		for _, s := range c.running() {
			nodes, err := c.view(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if order := matchmaking.GatherOrder(playlist, nodes); len(order) > 0 {
				ids = append(ids, order[0].ID)
			} else {
				ids = append(ids, "")
			}
		}
		if len(ids) > 0 && ids[0] != "" && !slices.ContainsFunc(ids, func(id string) bool { return id != ids[0] }) {
			return c.byID(ids[0])
		}
		if ctx.Err() != nil {
			t.Fatalf("the servers do not agree where %s gathers: %v", playlist, ids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop stops every server (SIGTERM, then SIGKILL to its group after 5 s)
// and checks their logs for data races and panics.
func (c *cluster) stop() {
	c.mu.Lock()
	all := slices.Clone(c.started)
	c.mu.Unlock()
	loads := map[*server]string{}
	for _, s := range all {
		if s.running() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			cp, err := c.capacity(ctx, s)
			cancel()
			loads[s] = fmt.Sprintf("load %d, stats %v, err %v", cp.Load, cp.Stats, err)
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, s := range all {
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
			// With every player gone, a drain has nothing to wait for.
			c.t.Errorf("%s did not stop within 5s of SIGTERM (at SIGTERM: %s); killed", s.id, loads[s])
		}
		s.kill(syscall.SIGKILL) // anything left in its group
		<-s.exited
		log := s.out.String()
		if strings.Contains(log, "WARNING: DATA RACE") || strings.Contains(log, "panic:") {
			c.t.Errorf("%s logged a data race or a panic:\n%s", s.id, log)
		} else if c.t.Failed() {
			c.t.Logf("log of %s (%s):\n%s", s.id, s.addr, tail(log, 80))
		}
	}
	if c.t.Failed() && c.nginx != nil {
		c.t.Logf("nginx error log:\n%s", tail(c.nginx.ErrorLog(), 40))
	}
	c.client.CloseIdleConnections()
}

func tail(s string, lines int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > lines {
		ls = append([]string{fmt.Sprintf("… %d lines", len(ls)-lines)}, ls[len(ls)-lines:]...)
	}
	return strings.Join(ls, "\n")
}

// logBuffer collects a process's output while the test reads it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// player starts a bot named name that plays through nginx until the test
// ends or leave stops it; its report is logged when the test fails.
func (c *cluster) player(t *testing.T, name string, cfg bot.Config) *bot.Bot {
	t.Helper()
	cfg.URL, cfg.Player, cfg.HTTPClient = c.url, name, c.client
	b, err := bot.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &runner{name: name, bot: b, cancel: cancel, errc: make(chan error, 1)}
	go func() { p.errc <- b.Run(ctx) }()
	c.mu.Lock()
	if c.players == nil {
		c.players = map[*testing.T][]*runner{}
	}
	c.players[t] = append(c.players[t], p)
	c.mu.Unlock()
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Errorf("%s: Run: %v", name, err)
		}
		if t.Failed() {
			t.Logf("%s:\n%s", name, b.Report().Log())
		}
	})
	return b
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
func (p *runner) stop() error {
	p.once.Do(func() {
		p.cancel()
		p.err = <-p.errc
	})
	return p.err
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
		if err := p.stop(); err != nil {
			t.Errorf("%s: Run: %v", p.name, err)
		}
	}
	for _, s := range c.running() {
		c.waitIdle(t, s)
	}
}

// waitAll waits until cond holds for every bot, or fails the test after
// timeout, naming the bots it was still waiting for.
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
