package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// TestServeReadsConfig: serve takes home's settings from a config file and
// MUSTER__ variables; behind the trusted proxy each client address has its
// own per-address budget (muster.federation.home.limits.per-ip), where
// before every node shared the proxy's.
func TestServeReadsConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "home.yml")
	if err := os.WriteFile(file, []byte(`muster:
  server:
    http:
      trusted-proxies: "127.0.0.1"
  federation:
    home:
      silent-after: 2m
      limits:
        per-ip: 5
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MUSTER__FEDERATION__HOME__LIMITS__PER_IP", "2") // the variable wins over the file
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(testbin.FreePort(t, "127.0.0.1")))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serveErr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "-addr", addr, "-config", file}, &bytes.Buffer{}, &serveErr)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d: %s", code, serveErr.String())
		}
	})
	if err := testbin.WaitDial(addr, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	join := func(client string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+addr+federation.PathJoin, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer mfn_not-a-key")
		req.Header.Set("X-Forwarded-For", client)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for i, want := range []int{401, 401, 429} {
		if got := join("198.51.100.1"); got != want {
			t.Fatalf("request %d of one client: %d, want %d", i+1, got, want)
		}
	}
	if got := join("198.51.100.2"); got != 401 {
		t.Fatalf("another client behind the proxy: %d, want 401 (a budget of its own)", got)
	}
}

// TestServeRefusesBadConfig: a bad setting stops serve naming its key and
// variable.
func TestServeRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct{ name, env, want string }{
		{"not a duration", "MUSTER__FEDERATION__HOME__SILENT_AFTER=soon", "muster.federation.home.silent-after / MUSTER__FEDERATION__HOME__SILENT_AFTER"},
		{"reap before silence", "MUSTER__FEDERATION__HOME__REAP_AFTER=1m", "muster.federation.home (MUSTER__FEDERATION__HOME__*, or the flags)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, value, _ := strings.Cut(tc.env, "=")
			t.Setenv(name, value)
			var errOut bytes.Buffer
			code := run(context.Background(), []string{"serve", "-addr", "127.0.0.1:0"}, &bytes.Buffer{}, &errOut)
			if code != 1 || !strings.Contains(errOut.String(), tc.want) {
				t.Fatalf("exit %d: %s; want %q", code, errOut.String(), tc.want)
			}
		})
	}
}
