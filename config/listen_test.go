package config_test

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

// TestListenBusyPort: a port in use is one line that names the key and
// its variable.
func TestListenBusyPort(t *testing.T) {
	t.Parallel()
	port := busyPort(t)
	c := config.Default()
	c.Server.HTTP.Host, c.Server.HTTP.Port = "127.0.0.1", port
	l, err := c.Listen(context.Background())
	if err == nil {
		l.Close()
		t.Fatal("listened on a busy port")
	}
	want := "config: muster.server.http.port / MUSTER__SERVER__HTTP__PORT: port " + strconv.Itoa(port) + " is in use on 127.0.0.1 (another server running?); choose another port"
	if err.Error() != want || !errors.Is(err, config.ErrInvalid) {
		t.Errorf("error\n got %v\nwant %s", err, want)
	}

	c.Server.HTTP.Port = 1
	c.Server.HTTP.Host = "127.0.0.1"
	if l, err := c.Listen(context.Background()); err == nil {
		l.Close() // running as root: port 1 is free to bind
	} else if want := "config: muster.server.http.port / MUSTER__SERVER__HTTP__PORT: port 1 may not be bound by this process (below 1024?); choose another port"; err.Error() != want {
		t.Errorf("error\n got %v\nwant %s", err, want)
	}
}

// TestListenOperatorBusyPort: ListenOperator's port in use is one line
// that names operator-port and its variable, not the game's port.
func TestListenOperatorBusyPort(t *testing.T) {
	t.Parallel()
	port := busyPort(t)
	c := config.Default()
	c.Server.HTTP.Host, c.Server.HTTP.OperatorPort = "127.0.0.1", port
	l, err := c.ListenOperator(context.Background())
	if err == nil {
		l.Close()
		t.Fatal("listened on a busy port")
	}
	want := "config: muster.server.http.operator-port / MUSTER__SERVER__HTTP__OPERATOR_PORT: port " + strconv.Itoa(port) + " is in use on 127.0.0.1 (another server running?); choose another port"
	if err.Error() != want || !errors.Is(err, config.ErrInvalid) {
		t.Errorf("error\n got %v\nwant %s", err, want)
	}
	if got := c.OperatorAddr(); got != "127.0.0.1:"+strconv.Itoa(port) {
		t.Errorf("OperatorAddr() = %q", got)
	}
	c.Server.HTTP.OperatorPort = 0
	if got := c.OperatorAddr(); got != "" {
		t.Errorf("OperatorAddr() with operator-port 0 = %q, want \"\"", got)
	}
	if l, err := c.ListenOperator(context.Background()); err == nil {
		l.Close()
		t.Error("ListenOperator with operator-port 0 listened")
	}
}

// TestListenUnresolvableHost: a host name that does not resolve is one
// line that names the key and its variable, not the resolver's error alone.
func TestListenUnresolvableHost(t *testing.T) {
	t.Parallel()
	c := config.Default()
	c.Server.HTTP.Host, c.Server.HTTP.Port = "-5", 1 // refused by the resolver without a DNS query
	l, err := c.Listen(context.Background())
	if err == nil {
		l.Close()
		t.Fatal("listened on host -5")
	}
	want := `config: muster.server.http.host / MUSTER__SERVER__HTTP__HOST: "-5" does not resolve to an address (no such host); set a host name or IP address of this machine`
	if err.Error() != want || !errors.Is(err, config.ErrInvalid) {
		t.Errorf("error\n got %v\nwant %s", err, want)
	}
}

// TestListenCanceled: a resolver that gave up because the context ended
// is not a bad host: the error is the context's, not a config error.
func TestListenCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := config.Default()
	c.Server.HTTP.Host, c.Server.HTTP.Port = "localhost", 1
	l, err := c.Listen(ctx)
	if err == nil {
		l.Close()
		t.Skip("the resolver answered despite the ended context")
	}
	if errors.Is(err, config.ErrInvalid) {
		t.Fatalf("Listen with an ended context: %v, a config error", err)
	}
}

func TestURL(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"0.0.0.0:8080":   "http://localhost:8080",
		"[::]:8080":      "http://localhost:8080",
		"127.0.0.2:9000": "http://127.0.0.2:9000",
		"[fd00::1]:80":   "http://[fd00::1]:80",
	} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := config.URL(a); got != want {
			t.Errorf("URL(%s) = %s, want %s", addr, got, want)
		}
	}
}
