package fleetproc

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
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/testbin"
	"github.com/muster-gg/muster/matchmaking"
)

// Config is what a suite chooses about its fleet. There are no defaults:
// a zero duration or count means zero (a zero log count means the whole
// log).
type Config struct {
	// Name prefixes the fleet's cluster name, which gets a random suffix
	// so that fleets sharing a Redis would not meet.
	Name string
	// Bin is the duel server binary (see Build).
	Bin string
	// Hosts are the loopback addresses of the servers, one slot each; each
	// gets a free port, kept for the slot's restarts.
	Hosts []string
	// Heartbeat and DrainTimeout are the servers' fleet heartbeat and
	// drain timeout.
	Heartbeat, DrainTimeout time.Duration
	// Env are further MUSTER__ variables, NAME=value, for every server.
	Env []string
	// Client is the HTTP client for the servers' probes and feeds, and for
	// the suite's own requests; the fleet closes its idle connections when
	// it stops.
	Client *http.Client
	// Live are the node states WaitView waits for, and ViewTimeout how
	// long it waits.
	Live        []fleet.State
	ViewTimeout time.Duration
	// NginxEdits are further replacements in deploy/nginx-local.conf, old
	// text then new, each old text present exactly once.
	NginxEdits [][2]string
	// UpstreamParams are added to each server line of nginx's upstream,
	// e.g. " max_fails=0": a slot restarted on its port is not taken for
	// down for nginx's fail_timeout because its predecessor's exit
	// refused a connection.
	UpstreamParams string
	// StopGrace is how long each server may take to exit after SIGTERM
	// when the test ends, before its process group is killed.
	StopGrace time.Duration
	// StopNote, if set, is called for each running server just before
	// its SIGTERM when the test ends; what it returns is quoted when the
	// server overruns StopGrace.
	StopNote func(*Fleet, *Server) string
	// Forbidden are what a server must never log (a panic, a data race):
	// a log containing one fails the test.
	Forbidden []string
	// ReadyLogLines, ForbiddenLogLines and FailLogLines are how many last
	// lines of a server's log are shown when it does not become ready,
	// when it logged something forbidden, and when the test failed
	// otherwise; 0 shows the whole log.
	ReadyLogLines, ForbiddenLogLines, FailLogLines int
}

// ServerEnv returns the MUSTER__ variables of a server with the given
// listening host and port, node id, internal address, Redis address,
// cluster name and key, with the configuration's real names, followed by
// c.Env.
func (c Config) ServerEnv(host string, port int, id, addr, redis, cluster, key string) []string {
	return append([]string{
		"MUSTER__SERVER__HTTP__HOST=" + host,
		"MUSTER__SERVER__HTTP__PORT=" + strconv.Itoa(port),
		"MUSTER__SERVER__FLEET__REDIS=" + redis,
		"MUSTER__SERVER__FLEET__CLUSTER=" + cluster,
		"MUSTER__SERVER__FLEET__NODE_ID=" + id,
		"MUSTER__SERVER__FLEET__INTERNAL_ADDRESS=" + addr,
		"MUSTER__SERVER__FLEET__HEARTBEAT=" + strconv.FormatFloat(c.Heartbeat.Seconds(), 'f', -1, 64),
		"MUSTER__SERVER__DRAIN__TIMEOUT=" + strconv.FormatFloat(c.DrainTimeout.Seconds(), 'f', -1, 64),
		"MUSTER__SECURITY__KEY=" + key,
	}, c.Env...)
}

// Fleet is a fleet of duel servers on loopback behind nginx, started by
// Start and stopped when the test that started it ends.
type Fleet struct {
	// Redis is the fleet's redis-server; a test may stop and restart it.
	Redis *testbin.Redis
	// Nginx is the proxy in front of the servers.
	Nginx *testbin.Nginx
	// URL is the fleet's one public address, nginx's, ending in "/".
	URL string
	// Name is the fleet's cluster name.
	Name string
	// Key is the fleet's security key.
	Key string
	// Client is Config.Client.
	Client *http.Client

	t     testing.TB
	cfg   Config
	root  string
	ports []int // per slot

	mu      sync.Mutex
	slots   []*Server
	started []*Server // every server started, for the final checks
	seq     int
}

// Start starts redis-server, one server per host (each ready), waits until
// they all see each other, then starts nginx in front of them. It stops
// them all when the test ends, and skips the test when redis-server or
// nginx is missing (fails under CI).
func Start(t testing.TB, cfg Config) *Fleet {
	t.Helper()
	testbin.Need(t, "redis-server")
	testbin.Need(t, "nginx")
	TakeTurn(t)
	f := &Fleet{
		t:      t,
		cfg:    cfg,
		root:   Root(t),
		Redis:  testbin.StartRedis(t),
		Key:    rand.Text(),
		Name:   cfg.Name + "-" + strings.ToLower(rand.Text()[:6]),
		Client: cfg.Client,
		slots:  make([]*Server, len(cfg.Hosts)),
	}
	for _, h := range cfg.Hosts {
		f.ports = append(f.ports, testbin.FreePort(t, h))
	}
	t.Cleanup(f.stop)
	for i := range cfg.Hosts {
		f.StartServer(t, i)
	}
	f.WaitView(t, len(cfg.Hosts))

	var upstreams []string
	for i, h := range cfg.Hosts {
		upstreams = append(upstreams, net.JoinHostPort(h, strconv.Itoa(f.ports[i])))
	}
	port := testbin.FreePort(t, "127.0.0.1")
	conf := f.renderNginx(t, port, upstreams)
	f.Nginx = testbin.StartNginxConfig(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), func(string) string { return conf })
	f.URL = "http://" + f.Nginx.Addr + "/"
	return f
}

// renderNginx returns deploy/nginx-local.conf, the README's configuration,
// with port in place of its listening port, upstreams in place of its
// servers (one per host) and Config.NginxEdits made. The file's paths are
// relative to nginx's -p directory.
func (f *Fleet) renderNginx(t testing.TB, port int, upstreams []string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.root, "deploy", "nginx-local.conf"))
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
	for i, h := range f.cfg.Hosts {
		replace("server "+h+":8080;", "server "+upstreams[i]+f.cfg.UpstreamParams+";")
	}
	for _, e := range f.cfg.NginxEdits {
		replace(e[0], e[1])
	}
	return s
}

// StartServer starts a new server in slot i, on that slot's address, with
// a new node id, and waits until it is ready.
func (f *Fleet) StartServer(t testing.TB, i int) *Server {
	t.Helper()
	f.mu.Lock()
	f.seq++
	s := &Server{
		ID:     fmt.Sprintf("duel-%d", f.seq),
		Host:   f.cfg.Hosts[i],
		Addr:   net.JoinHostPort(f.cfg.Hosts[i], strconv.Itoa(f.ports[i])),
		exited: make(chan struct{}),
	}
	f.slots[i] = s
	f.started = append(f.started, s)
	f.mu.Unlock()

	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(strings.ToUpper(kv), "MUSTER__")
	})
	env = append(env, f.cfg.ServerEnv(s.Host, f.ports[i], s.ID, s.Addr, f.Redis.Addr, f.Name, f.Key)...)
	s.cmd = exec.Command(f.cfg.Bin) // reads ./config.yml
	s.cmd.Dir = f.root
	s.cmd.Env = env
	if err := s.start(); err != nil {
		t.Fatalf("start %s: %v", s.ID, err)
	}
	f.WaitReady(t, s)
	return s
}

// Running returns the servers that run, by slot.
func (f *Fleet) Running() []*Server {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*Server
	for _, s := range f.slots {
		if s != nil && s.Running() {
			out = append(out, s)
		}
	}
	return out
}

// Started returns every server started so far, running or not, in start
// order.
func (f *Fleet) Started() []*Server {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.started)
}

// ByID returns the server with node id id, or nil.
func (f *Fleet) ByID(id string) *Server {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.started {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// Ensure restarts, with new node ids, the servers that were drained or
// killed, and waits until every server sees the full fleet.
func (f *Fleet) Ensure(t testing.TB) {
	t.Helper()
	for i := range f.cfg.Hosts {
		f.mu.Lock()
		s := f.slots[i]
		f.mu.Unlock()
		if !s.Running() {
			f.StartServer(t, i)
		}
	}
	f.WaitView(t, len(f.cfg.Hosts))
}

// Get fetches path from server s directly, not through nginx, and returns
// the status code and body.
func (f *Fleet) Get(ctx context.Context, s *Server, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Addr+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := f.Client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes(), err
}

// Capacity returns server s's capacity report.
func (f *Fleet) Capacity(ctx context.Context, s *Server) (fleet.Capacity, error) {
	var cp fleet.Capacity
	code, body, err := f.Get(ctx, s, fleet.PathCapacity)
	if err != nil {
		return cp, err
	}
	if code != http.StatusOK {
		return cp, fmt.Errorf("%s: %d", fleet.PathCapacity, code)
	}
	return cp, json.Unmarshal(body, &cp)
}

// WaitReady waits up to 20 s until s answers its readiness probe with 200,
// and fails the test with s's log otherwise.
func (f *Fleet) WaitReady(t testing.TB, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		code, _, err := f.Get(ctx, s, fleet.PathReady)
		if err == nil && code == http.StatusOK {
			return
		}
		if !s.Running() {
			t.Fatalf("%s exited before it was ready: %v\n%s", s.ID, s.err, s.Log())
		}
		if ctx.Err() != nil {
			t.Fatalf("%s not ready after 20s (last: %d %v)\n%s", s.ID, code, err, Tail(s.Log(), f.cfg.ReadyLogLines))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// View returns server s's view of the fleet, as its dashboard feed shows
// it.
func (f *Fleet) View(ctx context.Context, s *Server) ([]fleet.Node, error) {
	code, body, err := f.Get(ctx, s, dashboard.PathNodes)
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

// WaitView waits up to Config.ViewTimeout until every running server sees
// a fleet of n servers, each in one of the Config.Live states: then they
// all agree on where a queue gathers.
func (f *Fleet) WaitView(t testing.TB, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.ViewTimeout)
	defer cancel()
	for {
		ok := true
		var last []string
		for _, s := range f.Running() {
			nodes, err := f.View(ctx, s)
			last = append(last, fmt.Sprintf("%s sees %+v %v", s.ID, nodes, err))
			if err != nil || len(nodes) != n || slices.ContainsFunc(nodes, func(nd fleet.Node) bool {
				return !slices.Contains(f.cfg.Live, nd.State)
			}) {
				ok = false
			}
		}
		if ok {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the servers do not see a fleet of %d servers in states %v:\n%s", n, f.cfg.Live, strings.Join(last, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Gather returns the server where pl gathers now, as every running server
// computes it from its view of the registry; it waits up to 10 s until
// they agree.
func (f *Fleet) Gather(t testing.TB, pl matchmaking.Playlist) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		var ids []string
		for _, s := range f.Running() {
			nodes, err := f.View(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if order := matchmaking.GatherOrder(pl, nodes); len(order) > 0 {
				ids = append(ids, order[0].ID)
			} else {
				ids = append(ids, "")
			}
		}
		if len(ids) > 0 && ids[0] != "" && !slices.ContainsFunc(ids, func(id string) bool { return id != ids[0] }) {
			return f.ByID(ids[0])
		}
		if ctx.Err() != nil {
			t.Fatalf("the servers do not agree where %s gathers: %v", pl.Name, ids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop stops every server (SIGTERM, then SIGKILL to its group after
// Config.StopGrace) and checks their logs; it shows them, and nginx's
// error log, when the test failed.
func (f *Fleet) stop() {
	all := f.Started()
	notes := map[*Server]string{}
	for _, s := range all {
		if s.Running() {
			if f.cfg.StopNote != nil {
				notes[s] = " (at SIGTERM: " + f.cfg.StopNote(f, s) + ")"
			}
			_ = s.Signal(syscall.SIGTERM)
		}
	}
	for _, s := range all {
		select {
		case <-s.exited:
		case <-time.After(f.cfg.StopGrace):
			f.t.Errorf("%s did not stop within %v of SIGTERM%s; killed", s.ID, f.cfg.StopGrace, notes[s])
		}
		s.Kill(syscall.SIGKILL) // anything left in its group
		<-s.exited
		log := s.Log()
		if bad := Forbidden(log, f.cfg.Forbidden); bad != "" {
			f.t.Errorf("%s logged %s:\n%s", s.ID, bad, Tail(log, f.cfg.ForbiddenLogLines))
		} else if f.t.Failed() {
			f.t.Logf("log of %s (%s):\n%s", s.ID, s.Addr, Tail(log, f.cfg.FailLogLines))
		}
	}
	if f.t.Failed() && f.Nginx != nil {
		f.t.Logf("nginx error log:\n%s", Tail(f.Nginx.ErrorLog(), 40))
	}
	f.Client.CloseIdleConnections()
}
