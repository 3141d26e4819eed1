package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"go.uber.org/goleak"

	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "cli-admin-token-0123456789"

// cli runs one command line and returns its exit code and output.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// nodeKeyIn returns the key line printed by node create.
func nodeKeyIn(t *testing.T, out string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "mfn_") {
			return line
		}
	}
	t.Fatalf("no node key in %q", out)
	return ""
}

func TestAdminCommandsOnRedis(t *testing.T) {
	mr := miniredis.RunT(t)
	r := "-redis=" + mr.Addr()
	code, out, errOut := cli(t, "node", "create", r, "-id", "au-sydney", "-country", "au", "-name", "Sydney", "-region", "Oceania")
	if code != 0 {
		t.Fatalf("create: %d %s", code, errOut)
	}
	key := nodeKeyIn(t, out)

	// The key works at a home on the same register.
	bp, err := redis.Open(redis.Config{URL: mr.Addr(), Cluster: "home"})
	if err != nil {
		t.Fatal(err)
	}
	defer bp.Close()
	home, err := federation.NewHome(federation.HomeConfig{}, bp, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(home.Handler())
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+federation.PathJoin, strings.NewReader(`{"name":"syd-1"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("join with the printed key: %d", resp.StatusCode)
	}

	if code, _, errOut := cli(t, "node", "approve", "au-sydney", r); code != 0 {
		t.Fatalf("approve: %s", errOut)
	}
	_, out, _ = cli(t, "node", "list", r)
	if !strings.Contains(out, "au-sydney") || !strings.Contains(out, "approved") || !strings.Contains(out, "syd-1") {
		t.Fatalf("list:\n%s", out)
	}
	nodes, _ := home.Nodes(context.Background())
	serverID := nodes[0].Servers[0].ID
	if code, _, errOut := cli(t, "server", "revoke", serverID, r); code != 0 {
		t.Fatalf("server revoke: %s", errOut)
	}
	if code, _, errOut := cli(t, "node", "revoke", "au-sydney", r); code != 0 {
		t.Fatalf("node revoke: %s", errOut)
	}
	if code, _, errOut := cli(t, "node", "approve", "au-sydney", r); code != 1 || !strings.Contains(errOut, "revoked") {
		t.Fatalf("approve revoked: %d %s", code, errOut)
	}
	if code, _, errOut := cli(t, "server", "revoke", "nope", r); code != 1 || !strings.Contains(errOut, "not found") {
		t.Fatalf("revoke unknown: %d %s", code, errOut)
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"no command", nil, 2},
		{"unknown", []string{"frobnicate"}, 2},
		{"node without subcommand", []string{"node"}, 2},
		{"approve without id", []string{"node", "approve", "-redis=x:1"}, 2},
		{"no register", []string{"node", "list"}, 2},
		{"both registers", []string{"node", "list", "-redis=x:1", "-home=http://x"}, 2},
		{"home without token", []string{"node", "list", "-home=http://x"}, 2},
		{"home with a query", []string{"node", "list", "-home=http://x/?a=b", "-admin-token", token}, 2},
		{"home with a fragment", []string{"node", "list", "-home=http://x/#a", "-admin-token", token}, 2},
		{"home not http", []string{"node", "list", "-home=ftp://x", "-admin-token", token}, 2},
		{"bad flag", []string{"serve", "-nope"}, 2},
		{"help", []string{"help"}, 0},
		{"bad country", []string{"node", "create", "-redis=" + miniredis.RunT(t).Addr(), "-id", "x", "-country", "Australia"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("MUSTER_HOME_ADMIN_TOKEN", "")
			if code, _, errOut := cli(t, tt.args...); code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, errOut)
			}
		})
	}
}

// The admin CLI follows no redirect of home's: the token would go along
// to another port of the same host.
func TestAdminFollowsNoRedirect(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.Write([]byte(`{"nodes":[]}`))
	}))
	t.Cleanup(other.Close)
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(home.Close)
	if code, _, errOut := cli(t, "node", "list", "-home="+home.URL, "-admin-token", token); code != 1 || !strings.Contains(errOut, "307") {
		t.Errorf("a redirect of home: exit %d, %s; want exit 1 naming the 307", code, errOut)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect was followed %d times", n)
	}
}

// TestServeAndAdminOverHTTP runs serve with the register in memory and
// administers it through the admin API.
func TestServeAndAdminOverHTTP(t *testing.T) {
	port := testbin.FreePort(t, "127.0.0.1")
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serveErr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "-addr", addr, "-admin-token", token, "-home-game", "wss://home.example/play"}, &bytes.Buffer{}, &serveErr)
	}()
	if err := testbin.WaitDial(addr, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	home := "-home=http://" + addr
	code, out, errOut := cli(t, "node", "create", home, "-admin-token", token, "-id", "nz-auckland", "-country", "NZ")
	if code != 0 {
		t.Fatalf("create over HTTP: %s", errOut)
	}
	nodeKeyIn(t, out)
	if code, _, errOut := cli(t, "node", "approve", "nz-auckland", home, "-admin-token", token); code != 0 {
		t.Fatalf("approve over HTTP: %s", errOut)
	}
	if code, out, _ := cli(t, "node", "list", home, "-admin-token", token); code != 0 || !strings.Contains(out, "nz-auckland") {
		t.Fatalf("list over HTTP: %d %s", code, out)
	}
	if code, _, errOut := cli(t, "node", "list", home, "-admin-token", "wrong-token-wrong-token"); code != 1 || !strings.Contains(errOut, "401") {
		t.Fatalf("wrong token: %d %s", code, errOut)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exited %d: %s", code, serveErr.String())
	}
}
