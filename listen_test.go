package muster

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"

	"github.com/muster-gg/muster/config"
)

// busyPort returns a port of 127.0.0.1 that a listener holds until the
// test ends.
func busyPort(t *testing.T) int {
	t.Helper()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	return busy.Addr().(*net.TCPAddr).Port
}

// refused returns a listen's error, closing its listener when there was
// none.
func refused(l net.Listener, err error) error {
	if err == nil {
		l.Close()
	}
	return err
}

// TestListenBusyPort: a port in use, the game's or the operator's, is one
// line that names its key and variable.
func TestListenBusyPort(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key    string
		listen func(context.Context, config.Config) (net.Listener, error)
		set    func(h *config.HTTP, port int)
	}{
		{"muster.server.http.port / MUSTER__SERVER__HTTP__PORT", listen, func(h *config.HTTP, p int) { h.Port = p }},
		{"muster.server.http.operator-port / MUSTER__SERVER__HTTP__OPERATOR_PORT", listenOperator, func(h *config.HTTP, p int) { h.OperatorPort = p }},
	} {
		port := busyPort(t)
		c := DefaultConfig()
		c.Server.HTTP.Host = "127.0.0.1"
		tc.set(&c.Server.HTTP, port)
		err := refused(tc.listen(t.Context(), c))
		want := "config: " + tc.key + ": port " + strconv.Itoa(port) + " is in use on 127.0.0.1 (another server running?); choose another port"
		if err == nil || err.Error() != want || !errors.Is(err, config.ErrInvalid) {
			t.Errorf("error\n got %v\nwant %s", err, want)
		}
	}
}

// TestListenPrivilegedPort: a port the process may not bind is one line
// that names the key and its variable.
func TestListenPrivilegedPort(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Server.HTTP.Host, c.Server.HTTP.Port = "127.0.0.1", 1
	err := refused(listen(t.Context(), c))
	if want := "config: muster.server.http.port / MUSTER__SERVER__HTTP__PORT: port 1 may not be bound by this process (below 1024?); choose another port"; err != nil && err.Error() != want {
		t.Errorf("error\n got %v\nwant %s", err, want) // nil: running as root, port 1 is free to bind
	}
}

// TestListenOperatorPortZero: listenOperator with operator-port 0 is an
// error: Run calls it only when the port is set.
func TestListenOperatorPortZero(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Server.HTTP.Host = "127.0.0.1"
	if err := refused(listenOperator(t.Context(), c)); err == nil {
		t.Error("listenOperator with operator-port 0 listened")
	}
}

// TestListenUnresolvableHost: a host name that does not resolve is one
// line that names the key and its variable, not the resolver's error alone.
func TestListenUnresolvableHost(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Server.HTTP.Host, c.Server.HTTP.Port = "-5", 1 // refused by the resolver without a DNS query
	err := refused(listen(t.Context(), c))
	want := `config: muster.server.http.host / MUSTER__SERVER__HTTP__HOST: "-5" does not resolve to an address (no such host); set a host name or IP address of this machine`
	if err == nil || err.Error() != want || !errors.Is(err, config.ErrInvalid) {
		t.Errorf("error\n got %v\nwant %s", err, want)
	}
}

// TestListenCanceled: a resolver that gave up because the context ended
// is not a bad host: the error is the context's, not a config error.
func TestListenCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	c := DefaultConfig()
	c.Server.HTTP.Host, c.Server.HTTP.Port = "localhost", 1
	err := refused(listen(ctx, c))
	if err == nil {
		t.Skip("the resolver answered despite the ended context")
	}
	if errors.Is(err, config.ErrInvalid) {
		t.Fatalf("listen with an ended context: %v, a config error", err)
	}
}

// TestLocalURL: the URL logged at start opens the server: a wildcard or
// the usual loopback address becomes localhost, and any other address,
// such as a second loopback address a fleet on one machine listens on,
// stays as it is.
func TestLocalURL(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"0.0.0.0:8080":   "http://localhost:8080/",
		"[::]:8080":      "http://localhost:8080/",
		"127.0.0.1:8080": "http://localhost:8080/",
		"[::1]:8080":     "http://localhost:8080/",
		"127.0.0.2:8080": "http://127.0.0.2:8080/",
		"10.1.2.3:80":    "http://10.1.2.3:80/",
		"[fd00::1]:80":   "http://[fd00::1]:80/",
	} {
		tcp, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := localURL(tcp); got != want {
			t.Errorf("localURL(%s) = %s, want %s", addr, got, want)
		}
	}
}
