package testbin

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Coturn is a coturn TURN server started for a test, in use-auth-secret
// (TURN REST API) mode, listening on loopback only.
type Coturn struct {
	// Addr is the server's loopback address, host:port (UDP and TCP).
	Addr string
	// Port is Addr's port.
	Port int
	// Secret is the static-auth-secret credentials must be minted with.
	Secret string
	// Realm is the server's realm.
	Realm string
	// Dir holds the server's log, pid and database files.
	Dir string

	cmd *exec.Cmd
	out Buffer
}

// StartCoturn starts turnserver with --use-auth-secret and the given
// secret on a free 127.0.0.1 port, with its log, pid and database files in
// a test directory and TLS, DTLS and the CLI off, and stops it when the
// test ends. It skips the test when turnserver is missing (fails under CI).
func StartCoturn(tb testing.TB, secret string) *Coturn {
	tb.Helper()
	bin := Need(tb, "turnserver")
	c := &Coturn{Secret: secret, Realm: "muster.test", Dir: tb.TempDir()}
	c.Port = FreePort(tb, "127.0.0.1")
	c.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port))
	cmd := exec.Command(bin,
		"-n", // no configuration file
		"--use-auth-secret", "--static-auth-secret="+secret, "--realm="+c.Realm,
		"--listening-ip=127.0.0.1", "--relay-ip=127.0.0.1",
		"--listening-port="+strconv.Itoa(c.Port),
		"--min-port=49152", "--max-port=65535",
		"--allow-loopback-peers", // the test's peers are on loopback
		"--no-cli", "--no-tls", "--no-dtls",
		"--log-file="+filepath.Join(c.Dir, "turn.log"), "--simple-log",
		"--pidfile="+filepath.Join(c.Dir, "turn.pid"),
		"--db="+filepath.Join(c.Dir, "turndb"),
	)
	if err := StartChild(cmd, &c.out, false); err != nil {
		tb.Fatalf("start turnserver: %v", err)
	}
	c.cmd = cmd
	tb.Cleanup(c.stop)
	if err := WaitDial(c.Addr, 10*time.Second); err != nil {
		tb.Fatalf("turnserver on %s: %v\n%s", c.Addr, err, c.Log())
	}
	return c
}

// Log returns what the server has logged so far.
func (c *Coturn) Log() string {
	data, _ := os.ReadFile(filepath.Join(c.Dir, "turn.log"))
	return c.out.String() + string(data)
}

func (c *Coturn) stop() { kill(&c.cmd) }

// Allocate runs turnutils_uclient against the server with the given
// credentials: one TCP allocation, a few messages relayed to a loopback
// peer. It returns nil when the allocation succeeded and the client exited
// cleanly, or an error with the client's output. The client is killed when
// ctx ends.
func (c *Coturn) Allocate(ctx context.Context, tb testing.TB, username, password string) error {
	tb.Helper()
	bin := Need(tb, "turnutils_uclient")
	cmd := exec.CommandContext(ctx, bin,
		"-t", "-y", "-c", "-n", "1", "-m", "1",
		"-p", strconv.Itoa(c.Port), "-u", username, "-w", password,
		"127.0.0.1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("turnutils_uclient: %w\n%s", err, out)
	}
	if bytes.Contains(out, []byte("ERROR")) {
		return fmt.Errorf("turnutils_uclient reported an error:\n%s", out)
	}
	return nil
}
