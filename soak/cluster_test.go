package soak

// The fleet harness: a trimmed copy of e2e/cluster_test.go's (e2e is test
// code and cannot be imported), with what a soak needs on top: many
// client addresses, a larger nginx, server RSS, metrics and Redis claims.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
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

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testbin"
	"github.com/muster-gg/muster/matchmaking"
)

var (
	flagPlayers = flag.Int("players", 200, "concurrent bots for the load and fault scenarios (full run: 10000)")
	flagOutage  = flag.Duration("outage", 0, "how long Redis stays down (default 5s, 30s from 5000 players)")
	flagHold    = flag.Duration("hold", 10*time.Second, "how long the load is measured once every bot is seated")
	flagProbes  = flag.Int("probes", 20, "extra connections that measure ping round trips through nginx")
	flagSlow    = flag.Duration("slow", 30*time.Second, "how long a client that stopped reading may stay connected (the host pings every 10s and waits 10s)")

	flagStrictSlow = flag.Bool("strict-slow", true, "fail when a client that stopped reading is still connected after -slow")
)

const (
	heartbeat    = 500 * time.Millisecond
	drainTimeout = 10 * time.Second
	duelPkg      = "./examples/duel"
)

// The loopback addresses of the three servers.
var hosts = []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}

var buildDir string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "muster-soak-")
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

// buildDuel builds the example without the race detector: the servers are
// under load, and the race detector would measure itself.
func buildDuel(t testing.TB) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(buildDir, "duel")
	cmd := exec.Command(goBin, "build", "-o", bin, duelPkg)
	cmd.Dir = root(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", duelPkg, err, out)
	}
	return bin
}

// cluster is a fleet of duel servers on loopback behind nginx.
type cluster struct {
	t       *testing.T
	root    string
	bin     string
	redis   *testbin.Redis
	rdb     *goredis.Client
	key     string
	name    string
	maxLoad int
	ports   []int
	nginx   *testbin.Nginx
	url     string
	client  *http.Client

	mu      sync.Mutex
	slots   []*server
	started []*server
	seq     int
}

type server struct {
	id     string
	host   string
	addr   string
	cmd    *exec.Cmd
	out    *logBuffer
	exited chan struct{}
	err    error
}

func startCluster(t *testing.T, maxLoad int) *cluster {
	t.Helper()
	testbin.Need(t, "redis-server")
	testbin.Need(t, "nginx")
	c := &cluster{
		t:       t,
		root:    root(t),
		bin:     buildDuel(t),
		redis:   testbin.StartRedis(t),
		key:     rand.Text(),
		name:    "soak-" + strings.ToLower(rand.Text()[:6]),
		maxLoad: maxLoad,
		slots:   make([]*server, len(hosts)),
	}
	c.rdb = goredis.NewClient(&goredis.Options{Addr: c.redis.Addr, MaxRetries: -1})
	t.Cleanup(func() { c.rdb.Close() })
	for _, h := range hosts {
		c.ports = append(c.ports, testbin.FreePort(t, h))
	}
	c.client = &http.Client{Transport: &http.Transport{MaxIdleConns: 50, MaxIdleConnsPerHost: 20, IdleConnTimeout: 10 * time.Second}}
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

// renderNginx returns deploy/nginx-local.conf with its ports replaced, and
// two changes for a soak: room for many connections, and proxy_bind to the
// client's address, so that a server sees each bot's own loopback address
// (the network position a real client has) instead of nginx's.
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
	replace("worker_connections 4096;", "worker_connections 60000;")
	replace("worker_processes 1;", "worker_processes 1;\nworker_rlimit_nofile 65536;")
	replace("proxy_pass http://game;", "proxy_pass http://game;\n            proxy_bind $remote_addr;")
	return s
}

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
	env = append(env,
		"MUSTER__SERVER__HTTP__HOST="+s.host,
		"MUSTER__SERVER__HTTP__PORT="+strconv.Itoa(c.ports[i]),
		"MUSTER__SERVER__FLEET__REDIS="+c.redis.Addr,
		"MUSTER__SERVER__FLEET__CLUSTER="+c.name,
		"MUSTER__SERVER__FLEET__NODE_ID="+s.id,
		"MUSTER__SERVER__FLEET__INTERNAL_ADDRESS="+s.addr,
		"MUSTER__SERVER__FLEET__HEARTBEAT="+strconv.FormatFloat(heartbeat.Seconds(), 'f', -1, 64),
		"MUSTER__SERVER__DRAIN__TIMEOUT="+strconv.FormatFloat(drainTimeout.Seconds(), 'f', -1, 64),
		"MUSTER__SERVER__CAPACITY__MAX_LOAD="+strconv.Itoa(c.maxLoad),
		"MUSTER__SECURITY__KEY="+c.key,
	)
	s.cmd = exec.Command(c.bin, "-config", filepath.Join(c.root, "config.yml"))
	s.cmd.Dir = c.root
	s.cmd.Env = env
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // Pdeathsig follows the starting thread
		defer runtime.UnlockOSThread()
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	if err := <-started; err != nil {
		t.Fatalf("start %s: %v", s.id, err)
	}
	c.waitReady(t, s)
	return s
}

func (s *server) running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

func (s *server) kill(sig syscall.Signal) { _ = syscall.Kill(-s.cmd.Process.Pid, sig) }

// rss returns the server's resident set size in bytes.
func (s *server) rss() int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

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

// ensure restarts, with new node ids, the servers that were killed or
// drained.
func (c *cluster) ensure(t *testing.T) {
	t.Helper()
	for i := range hosts {
		c.mu.Lock()
		s := c.slots[i]
		c.mu.Unlock()
		if !s.running() {
			c.startServer(t, i)
		}
	}
	c.waitView(t, len(hosts))
}

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
			t.Fatalf("%s not ready after 20s (last: %d %v)\n%s", s.id, code, err, tail(s.out.String(), 40))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

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

// waitView waits until every running server sees n live servers (ready or
// full: a loaded server may be full).
func (c *cluster) waitView(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		ok := true
		var last []string
		for _, s := range c.running() {
			nodes, err := c.view(ctx, s)
			last = append(last, fmt.Sprintf("%s sees %+v %v", s.id, nodes, err))
			if err != nil || len(nodes) != n || slices.ContainsFunc(nodes, func(nd fleet.Node) bool {
				return nd.State != fleet.StateReady && nd.State != fleet.StateFull
			}) {
				ok = false
			}
		}
		if ok {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the servers do not see a fleet of %d live servers:\n%s", n, strings.Join(last, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gather returns the server where playlist gathers, once the running
// servers agree.
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

// metrics scrapes a server's /metrics into series → value (series is the
// name with its labels, as printed).
func (c *cluster) metrics(ctx context.Context, s *server) (map[string]float64, error) {
	code, body, err := c.get(ctx, s, "/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %d", code)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			m[line[:i]] = v
		}
	}
	return m, sc.Err()
}

// sumMetric adds up series over the running servers.
func (c *cluster) sumMetric(ctx context.Context, series string) (float64, map[string]float64, error) {
	var sum float64
	per := map[string]float64{}
	for _, s := range c.running() {
		m, err := c.metrics(ctx, s)
		if err != nil {
			return 0, nil, fmt.Errorf("%s: %w", s.id, err)
		}
		sum += m[series]
		per[s.id] = m[series]
	}
	return sum, per, nil
}

// stop stops every server and checks every log for panics and races.
func (c *cluster) stop() {
	c.mu.Lock()
	all := slices.Clone(c.started)
	c.mu.Unlock()
	for _, s := range all {
		if s.running() {
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, s := range all {
		select {
		case <-s.exited:
		case <-time.After(drainTimeout + 10*time.Second):
			c.t.Errorf("%s did not stop within %v of SIGTERM; killed", s.id, drainTimeout+10*time.Second)
		}
		s.kill(syscall.SIGKILL)
		<-s.exited
		if bad := badLog(s.out.String()); bad != "" {
			c.t.Errorf("%s logged %s:\n%s", s.id, bad, tail(s.out.String(), 80))
		} else if c.t.Failed() {
			c.t.Logf("log of %s (%s):\n%s", s.id, s.addr, tail(s.out.String(), 40))
		}
	}
	if c.t.Failed() && c.nginx != nil {
		c.t.Logf("nginx error log:\n%s", tail(c.nginx.ErrorLog(), 40))
	}
	c.client.CloseIdleConnections()
}

// badLog names what a server must never log: a panic, a data race, a
// fatal runtime error.
func badLog(log string) string {
	for _, s := range []string{"panic:", "WARNING: DATA RACE", "fatal error:"} {
		if strings.Contains(log, s) {
			return s
		}
	}
	return ""
}

func tail(s string, lines int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > lines {
		ls = append([]string{fmt.Sprintf("… %d lines", len(ls)-lines)}, ls[len(ls)-lines:]...)
	}
	return strings.Join(ls, "\n")
}

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

// clientAddr returns the loopback address of client i of a block (bots
// are block 1, probes 2, attackers 3): 127.<block>.<i/250>.<i%250+1>.
func clientAddr(block, i int) net.IP {
	return net.IPv4(127, byte(block), byte(i/250), byte(i%250+1))
}

// clientHTTP returns an HTTP client whose connections come from ip.
func clientHTTP(ip net.IP) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 5 * time.Second}
	return &http.Client{Transport: &http.Transport{
		DialContext:         d.DialContext,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     5 * time.Second,
	}}
}
