// Package fedtest is the shared setup of the federation's end-to-end
// tests: a home on a real Redis served over HTTP, approved nodes, the
// muster-node binary and the processes of a node (started on loopback,
// stopped when the test ends) and home-minted tokens, with which a
// playtest player enters a node's game server.
//
// Like internal/testkit/testbin, everything skips the test with one line when a
// program is missing (redis-server, go), and fails it under CI=true.
package fedtest

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/internal/testkit/testbin"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// AnnounceEvery is how often the agents of a test announce, and
// SilentAfter when home takes a silent server out: short, so a test waits
// for rotation changes in seconds.
const (
	AnnounceEvery = 200 * time.Millisecond
	SilentAfter   = 2 * time.Second
)

// Home is a federation home on a real redis-server, its doors served on
// 127.0.0.1 at URL. The embedded *federation.Home is its admin API.
type Home struct {
	*federation.Home
	// URL is the base URL nodes and placers use.
	URL string
}

// StartHome starts redis-server and a Home on it whose servers may
// announce every AnnounceEvery (no announce rate limit) and are silent
// after SilentAfter, with no regions cache; everything stops when the test
// ends. It skips the test when redis-server is missing (fails under CI).
func StartHome(tb testing.TB) *Home {
	tb.Helper()
	srv := testbin.StartRedis(tb)
	bp, err := redis.Open(redis.Config{URL: srv.Addr, Cluster: "home"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { bp.Close() })
	home, err := federation.NewHome(federation.HomeConfig{
		RegionsCache: -1, SilentAfter: SilentAfter, AnnounceEvery: AnnounceEvery,
		Limits: federation.RateLimits{Announce: -1},
	}, bp, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		tb.Fatal(err)
	}
	return Serve(tb, home)
}

// Serve serves h's doors on 127.0.0.1 until the test ends.
func Serve(tb testing.TB, h *federation.Home) *Home {
	tb.Helper()
	hs := httptest.NewServer(h.Handler())
	tb.Cleanup(hs.Close)
	return &Home{Home: h, URL: hs.URL}
}

// ApprovedNode creates the node id for country at home, approves it and
// returns its node key.
func (h *Home) ApprovedNode(tb testing.TB, id, country string) string {
	tb.Helper()
	ctx := context.Background()
	_, key, err := h.CreateNode(ctx, federation.NodeSpec{ID: id, Country: country})
	if err != nil {
		tb.Fatal(err)
	}
	if err := h.Approve(ctx, id); err != nil {
		tb.Fatal(err)
	}
	return key
}

// BuildMusterNode builds cmd/muster-node into dir and returns the binary's
// path. It skips the test when go is missing (fails under CI).
func BuildMusterNode(tb testing.TB, dir string) string {
	tb.Helper()
	goBin := testbin.Need(tb, "go")
	bin := filepath.Join(dir, "muster-node")
	out, err := exec.Command(goBin, "build", "-o", bin, "github.com/muster-gg/muster/cmd/muster-node").CombinedOutput()
	if err != nil {
		tb.Fatalf("build muster-node: %v\n%s", err, out)
	}
	return bin
}

// Proc is a process a test started with Start.
type Proc struct {
	// Name names it in the test's messages.
	Name string
	// Out collects its standard output and error.
	Out *testbin.Buffer
	// Done is closed when it has exited.
	Done <-chan struct{}

	cmd *exec.Cmd
}

// ExitCode returns the process's exit status once Done is closed, -1
// before or when a signal ended it.
func (p *Proc) ExitCode() int {
	select {
	case <-p.Done:
		return p.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

// Start runs bin with args and the test's environment plus env until the
// test ends, when it is sent SIGTERM (and killed, failing the test, if it
// has not stopped 20 s later). Its output is logged when the test fails,
// and a data race or panic in it fails the test.
func Start(tb testing.TB, name, bin string, env []string, args ...string) *Proc {
	tb.Helper()
	out := &testbin.Buffer{}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	if err := testbin.StartChild(cmd, out, false); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	tb.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
			tb.Errorf("%s did not stop on SIGTERM", name)
		}
		log := out.String()
		if strings.Contains(log, "WARNING: DATA RACE") || strings.Contains(log, "panic:") {
			tb.Errorf("%s:\n%s", name, log)
		} else if tb.Failed() {
			tb.Logf("%s:\n%s", name, log)
		}
	})
	return &Proc{Name: name, Out: out, Done: done, cmd: cmd}
}

// Mint returns a token for player that home mints with secret for a room
// on node, good for a minute.
func Mint(tb testing.TB, secret, player, room, node string) string {
	tb.Helper()
	tok, err := federation.MintToken([]byte(secret), federation.Token{PlayerID: player, RoomID: room, NodeID: node, Expires: time.Now().Add(time.Minute)})
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// WaitFor polls cond until it holds, failing the test after a minute:
// processes take longer than a test's own parts.
func WaitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	testrun.WaitWithin(tb, time.Minute, what, cond)
}

// RevokeAgent revokes the server serverID at home and waits until agent,
// the muster-node process announcing as that server, has stopped as a
// revoked agent does: exit status 3, saying home refuses the server.
func (h *Home) RevokeAgent(tb testing.TB, serverID string, agent *Proc) {
	tb.Helper()
	if err := h.RevokeServer(context.Background(), serverID); err != nil {
		tb.Fatal(err)
	}
	select {
	case <-agent.Done:
	case <-time.After(time.Minute):
		tb.Fatalf("%s still runs a minute after its server was revoked", agent.Name)
	}
	if code := agent.ExitCode(); code != 3 || !strings.Contains(agent.Out.String(), "refuses this server") {
		tb.Fatalf("%s, revoked: exit %d, want 3", agent.Name, code)
	}
}

// StartPlacer runs a federation.Placer for cfg (polling every 50 ms
// unless cfg says otherwise, and quiet) until the test ends.
func StartPlacer(tb testing.TB, cfg federation.PlacerConfig) *federation.Placer {
	tb.Helper()
	if cfg.PollEvery == 0 {
		cfg.PollEvery = 50 * time.Millisecond
	}
	p, err := federation.NewPlacer(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		tb.Fatal(err)
	}
	testrun.GoRun(tb, p.Run)
	return p
}
