package muster_test

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/testbin"
	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/matchmaking"
)

// operatorPaths are the operator's: on the operator's port alone when
// muster.server.http.operator-port is set.
var operatorPaths = []string{fleet.PathLive, fleet.PathReady, fleet.PathCapacity, "/metrics", dashboard.Path, dashboard.PathNodes}

// TestOperatorPort: with muster.server.http.operator-port set, the probes,
// /metrics and the dashboard answer on that port and 404 on the game's,
// which still takes tickets and players; the operator's port has the
// game's RealIP (a drain a trusted proxy forwarded is refused) and its
// idle timeout; the "serving" line names both ports; Run returns once
// both ports are closed.
func TestOperatorPort(t *testing.T) {
	t.Parallel()
	cfg := muster.DefaultConfig()
	cfg.Server.HTTP.Host = "127.0.0.1"
	cfg.Server.HTTP.Port = testbin.FreePort(t, "127.0.0.1")
	for cfg.Server.HTTP.OperatorPort == 0 || cfg.Server.HTTP.OperatorPort == cfg.Server.HTTP.Port {
		cfg.Server.HTTP.OperatorPort = testbin.FreePort(t, "127.0.0.1")
	}
	cfg.Server.HTTP.TrustedProxies = "127.0.0.1"
	cfg.Server.HTTP.RealIPHeader = "X-Client-IP"
	game := "127.0.0.1:" + strconv.Itoa(cfg.Server.HTTP.Port)
	op := "127.0.0.1:" + strconv.Itoa(cfg.Server.HTTP.OperatorPort)

	const idle = 200 * time.Millisecond
	var log testbin.Buffer
	s, err := muster.New(Counter{}, cfg, muster.WithLogger(slog.New(slog.NewTextHandler(&log, nil))), muster.WithGuestTickets("/ticket"),
		muster.WithPlaylists(matchmaking.Playlist{Name: "duel"}), muster.WithHTTPTimeouts(idle, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	run := runServer(t, s)
	client := &http.Client{Timeout: closedWithin}
	defer client.CloseIdleConnections()
	waitUntil(t, "ready", func() bool { return s.Fleet().State() == fleet.StateReady })
	if want := " url=http://localhost:" + strconv.Itoa(cfg.Server.HTTP.Port) + "/ operator_url=http://localhost:" + strconv.Itoa(cfg.Server.HTTP.OperatorPort) + "/ backplane=memory"; !strings.Contains(log.String(), "msg=serving ") || !strings.Contains(log.String(), want) {
		t.Errorf("the log has no %q:\n%s", want, log.String())
	}

	do := func(method, addr, path string, header http.Header) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s on %s: %v", method, path, addr, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range operatorPaths {
		if code, body := do(http.MethodGet, op, path, nil); code != http.StatusOK {
			t.Errorf("GET %s on the operator's port: %d %.100q, want 200", path, code, body)
		}
		if code, _ := do(http.MethodGet, game, path, nil); code != http.StatusNotFound {
			t.Errorf("GET %s on the game's port: %d, want 404", path, code)
		}
	}
	if code, _ := do(http.MethodPost, game, fleet.PathDrain, nil); code != http.StatusNotFound {
		t.Errorf("POST %s on the game's port: %d, want 404", fleet.PathDrain, code)
	}
	for _, path := range []string{"/play", "/ticket"} {
		if code, _ := do(http.MethodPost, op, path, nil); code != http.StatusNotFound {
			t.Errorf("POST %s on the operator's port: %d, want 404", path, code)
		}
	}
	// From a trusted proxy (loopback) naming a client in the real-ip
	// header: only the operator's RealIP knows that header, and then the
	// drain is not local.
	if code, _ := do(http.MethodPost, op, fleet.PathDrain, http.Header{"X-Client-Ip": {"203.0.113.5"}}); code != http.StatusForbidden {
		t.Errorf("POST %s forwarded by a trusted proxy: %d, want 403", fleet.PathDrain, code)
	}
	if st := s.Fleet().State(); st != fleet.StateReady {
		t.Fatalf("state %s after a refused drain", st)
	}

	// The game's port: a ticket, then a player.
	code, body := do(http.MethodPost, game, "/ticket", nil)
	var tk struct{ Ticket, Player string }
	if err := json.Unmarshal([]byte(body), &tk); code != http.StatusOK || err != nil || tk.Ticket == "" {
		t.Fatalf("POST /ticket on the game's port: %d %q", code, body)
	}
	c := dialPlay(t, game, "ticket="+tk.Ticket)
	c.welcome(t, tk.Player)
	c.Close(websocket.StatusNormalClosure, "")

	// The operator's server has the game's timeouts: a quiet keep-alive
	// connection is closed at the idle timeout.
	idleConn, idleR := testrun.KeptAlive(t, op, "muster", fleet.PathLive)
	testrun.WaitClosed(t, "the idle keep-alive connection to the operator's port", idleConn, idleR, closedWithin)

	run.stop(t) // Run's error, if any, is reported at cleanup
	for _, addr := range []string{game, op} {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after Run returned", addr)
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dial %s after Run: %v, want connection refused", addr, err)
		}
	}
}

// TestOperatorHandler: Handler leaves out the operator's paths when
// operator-port is set; OperatorHandler has them and nothing else, with
// or without it.
func TestOperatorHandler(t *testing.T) {
	t.Parallel()
	for _, port := range []int{0, testbin.FreePort(t, "127.0.0.1")} {
		cfg := muster.DefaultConfig()
		cfg.Server.HTTP.Host = "127.0.0.1"
		cfg.Server.HTTP.OperatorPort = port
		s, err := muster.New(Counter{}, cfg, muster.WithListener(loopback(t)), quiet, muster.WithGuestTickets("/ticket"))
		if err != nil {
			t.Fatal(err)
		}
		get := func(h http.Handler, method, path string) int {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
			return rec.Code
		}
		wantGame := http.StatusOK
		if port != 0 {
			wantGame = http.StatusNotFound
		}
		for _, path := range []string{fleet.PathLive, "/metrics", dashboard.Path} {
			if code := get(s.Handler(), http.MethodGet, path); code != wantGame {
				t.Errorf("operator-port %d: Handler: GET %s: %d, want %d", port, path, code, wantGame)
			}
			if code := get(s.OperatorHandler(), http.MethodGet, path); code != http.StatusOK {
				t.Errorf("operator-port %d: OperatorHandler: GET %s: %d, want 200", port, path, code)
			}
		}
		if code := get(s.Handler(), http.MethodPost, "/ticket"); code != http.StatusOK {
			t.Errorf("operator-port %d: Handler: POST /ticket: %d, want 200", port, code)
		}
		if code := get(s.OperatorHandler(), http.MethodPost, "/ticket"); code != http.StatusNotFound {
			t.Errorf("operator-port %d: OperatorHandler: POST /ticket: %d, want 404", port, code)
		}
		// Run, stopped at once, closes what New opened.
		if err := runStopped(s); err != nil {
			t.Errorf("operator-port %d: Run: %v", port, err)
		}
	}
}

// TestOperatorPortBusy: an operator's port in use fails Run with the line
// naming its key and variable, and closes the game's listener it was given.
func TestOperatorPortBusy(t *testing.T) {
	t.Parallel()
	busy, l := loopback(t), loopback(t)
	cfg := muster.DefaultConfig()
	cfg.Server.HTTP.Host = "127.0.0.1"
	cfg.Server.HTTP.OperatorPort = busy.Addr().(*net.TCPAddr).Port
	err := muster.Serve(t.Context(), Counter{}, cfg, muster.WithListener(l), quiet)
	if err == nil || !strings.Contains(err.Error(), "muster.server.http.operator-port / MUSTER__SERVER__HTTP__OPERATOR_PORT: port "+strconv.Itoa(cfg.Server.HTTP.OperatorPort)+" is in use") {
		t.Fatalf("Serve with a busy operator's port: %v, want the line naming muster.server.http.operator-port", err)
	}
	if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
		c.Close()
		t.Error("the game's listener is still open")
	}
}
