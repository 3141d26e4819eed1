package soak

// The fleet harness: internal/testkit/fleetproc's, with what a soak needs on top:
// many client addresses, a larger nginx, server RSS, metrics and Redis
// claims.

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleetproc"
)

var (
	flagPlayers = flag.Int("players", 0, "concurrent bots for the load and fault scenarios (default 200, 50 under the race detector; full run: 10000)")
	flagOutage  = flag.Duration("outage", 0, "how long Redis stays down (default 5s, 30s from 5000 players)")
	flagHold    = flag.Duration("hold", 10*time.Second, "how long the load is measured once every bot is seated")
	flagProbes  = flag.Int("probes", 20, "extra connections that measure ping round trips through nginx")
	flagSlow    = flag.Duration("slow", 30*time.Second, "how long a client that stopped reading may stay connected (the host pings every 10s and waits 10s)")

	flagStrictSlow = flag.Bool("strict-slow", true, "fail when a client that stopped reading is still connected after -slow")
)

const (
	heartbeat    = 500 * time.Millisecond
	drainTimeout = 10 * time.Second

	// scrapeTimeout bounds one pass over the servers' /metrics. The
	// suite's own requests come from the starved test process (see
	// botPatience) to servers that are starved too: beside a CPU hog a
	// scrape that a server answered in 7 ms to curl run just after had
	// waited 1.8 s for its connection and no answer 10 s after it began.
	scrapeTimeout = 30 * time.Second
)

// The loopback addresses of the three servers.
var hosts = []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}

var buildDir string

func TestMain(m *testing.M) {
	flag.Parse()
	fleetproc.Main(m, "muster-soak-", &buildDir)
}

// buildDuel builds the example without the race detector: the servers are
// under load, and the race detector would measure itself.
func buildDuel(t testing.TB) string {
	t.Helper()
	bin, err := fleetproc.Build(t, buildDir, false)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// forbidden is what a server must never log: a panic, a data race, a
// fatal runtime error.
var forbidden = []string{"panic:", "WARNING: DATA RACE", "fatal error:"}

// cluster is a fleet of duel servers on loopback behind nginx, with a
// client of its Redis.
type cluster struct {
	*fleetproc.Fleet
	rdb     *goredis.Client
	maxLoad int // every server's
}

type server = fleetproc.Server

func startCluster(t *testing.T, maxLoad int) *cluster {
	t.Helper()
	f := fleetproc.Start(t, fleetproc.Config{
		Name:         "soak",
		Bin:          buildDuel(t),
		Hosts:        hosts,
		Heartbeat:    heartbeat,
		DrainTimeout: drainTimeout,
		Env:          []string{"MUSTER__SERVER__CAPACITY__MAX_LOAD=" + strconv.Itoa(maxLoad)},
		Client:       &http.Client{Transport: &http.Transport{MaxIdleConns: 50, MaxIdleConnsPerHost: 20, IdleConnTimeout: 10 * time.Second}},
		// A loaded server may be full.
		Live:        []fleet.State{fleet.StateReady, fleet.StateFull},
		ViewTimeout: 30 * time.Second,
		// Two changes for a soak: room for many connections, and
		// proxy_bind to the client's address, so that a server sees each
		// bot's own loopback address (the network position a real client
		// has) instead of nginx's.
		NginxEdits: [][2]string{
			{"worker_connections 4096;", "worker_connections 60000;"},
			{"worker_processes 1;", "worker_processes 1;\nworker_rlimit_nofile 65536;"},
			{"proxy_pass http://game;", "proxy_pass http://game;\n            proxy_bind $remote_addr;"},
		},
		StopGrace:         drainTimeout + 10*time.Second,
		Forbidden:         forbidden,
		ReadyLogLines:     40,
		ForbiddenLogLines: 80,
		FailLogLines:      40,
	})
	c := &cluster{Fleet: f, rdb: goredis.NewClient(&goredis.Options{Addr: f.Redis.Addr, MaxRetries: -1}), maxLoad: maxLoad}
	t.Cleanup(func() { c.rdb.Close() })
	return c
}

// rss returns the server's resident set size in bytes.
func rss(s *server) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.PID()))
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

// metrics scrapes a server's /metrics into series → value (series is the
// name with its labels, as printed).
func (c *cluster) metrics(ctx context.Context, s *server) (map[string]float64, error) {
	code, body, err := c.Get(ctx, s, "/metrics")
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
	for _, s := range c.Running() {
		m, err := c.metrics(ctx, s)
		if err != nil {
			return 0, nil, fmt.Errorf("%s: %w", s.ID, err)
		}
		sum += m[series]
		per[s.ID] = m[series]
	}
	return sum, per, nil
}

// waitConnected polls the servers' muster_players_connected until they
// hold at least want connections in all, for up to timeout, and returns
// the last count.
func (c *cluster) waitConnected(want float64, timeout time.Duration) (float64, error) {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
		n, _, err := c.sumMetric(ctx, "muster_players_connected")
		cancel()
		if err == nil && n >= want {
			return n, nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("still %v after %v", n, timeout)
			}
			return n, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// badLog names what a server must never log that log contains, or "".
func badLog(log string) string { return fleetproc.Forbidden(log, forbidden) }

func tail(s string, lines int) string { return fleetproc.Tail(s, lines) }

// clientAddr returns the loopback address of client i of a block (bots
// are block 1, probes 2, attackers 3): 127.<block>.<i/250>.<i%250+1>.
func clientAddr(block, i int) net.IP {
	return net.IPv4(127, byte(block), byte(i/250), byte(i%250+1))
}

// clientHTTP returns an HTTP client whose connections come from ip.
func clientHTTP(ip net.IP) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: botPatience}
	return &http.Client{Transport: &http.Transport{
		DialContext:         d.DialContext,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     5 * time.Second,
	}}
}
