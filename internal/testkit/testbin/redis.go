package testbin

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Redis is a redis-server process started for a test.
type Redis struct {
	// Addr is the server's loopback address, host:port.
	Addr string

	tb       testing.TB
	bin      string
	dir      string
	port     int
	conf     string   // a config file to pass first (sentinels), or ""
	sentinel bool     // run as a sentinel, with conf
	args     []string // more arguments, after the defaults
	cmd      *exec.Cmd
	out      bytes.Buffer
}

// StartRedis starts a redis-server without persistence on a free loopback
// port and stops it when the test ends.
func StartRedis(tb testing.TB) *Redis {
	tb.Helper()
	r := &Redis{tb: tb, bin: Need(tb, "redis-server"), dir: tb.TempDir()}
	r.port = FreePort(tb, "127.0.0.1")
	r.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port))
	r.Start()
	tb.Cleanup(r.Stop)
	return r
}

// LaunchRedis starts the redis-server binary bin without persistence on
// 127.0.0.1:port, with its files in dir. It is the part of StartRedis that
// needs no testing.TB, for benchmark programs: the caller must call Stop,
// and not Start.
func LaunchRedis(bin, dir string, port int) (*Redis, error) {
	r := &Redis{bin: bin, dir: dir, port: port}
	r.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := r.launch(); err != nil {
		return nil, err
	}
	return r, nil
}

// Start starts the server again after Stop, on the same port and empty.
func (r *Redis) Start() {
	r.tb.Helper()
	if r.cmd != nil {
		r.tb.Fatalf("redis-server on %s is already running", r.Addr)
	}
	if err := r.launch(); err != nil {
		r.tb.Fatal(err)
	}
}

// launch starts the process and waits until it accepts connections. It
// calls no testing.TB method, so servers can start in parallel.
func (r *Redis) launch() error {
	r.out.Reset()
	var args []string
	if r.sentinel {
		args = append(args, r.conf, "--sentinel")
	}
	args = append(args,
		"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--protected-mode", "no", "--loglevel", "warning")
	if !r.sentinel {
		args = append(args, "--save", "", "--appendonly", "no",
			"--pidfile", filepath.Join(r.dir, "redis.pid"))
	}
	args = append(args, r.args...)
	cmd := exec.Command(r.bin, args...)
	if err := StartChild(cmd, &r.out, false); err != nil {
		return fmt.Errorf("start redis-server: %v", err)
	}
	r.cmd = cmd
	if err := WaitDial(r.Addr, 10*time.Second); err != nil {
		r.Stop()
		return fmt.Errorf("redis-server on %s: %v\n%s", r.Addr, err, r.out.String())
	}
	return nil
}

// Stop kills the server and waits for it to exit. It is safe to call when
// the server is not running.
func (r *Redis) Stop() { kill(&r.cmd) }
