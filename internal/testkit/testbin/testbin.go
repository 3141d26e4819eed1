// Package testbin finds and starts the outside programs that tests use
// (redis-server, nginx, chromium) on free loopback ports.
//
// A test that needs a program calls Need: when the program is not on PATH
// the test is skipped with a one-line reason, except when the environment
// says CI=true, where a missing program fails the test instead.
package testbin

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// InCI reports whether the tests run under CI (CI=true), where a missing
// program is a failure rather than a reason to skip.
func InCI() bool {
	v, _ := strconv.ParseBool(os.Getenv("CI"))
	return v
}

// Need returns the path of the named program. When it is not on PATH the
// test is skipped, or failed under CI.
func Need(tb testing.TB, name string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	Unavailable(tb, "%s is not on PATH", name)
	return ""
}

// Unavailable skips the test with a one-line reason for something it
// needs from outside (a program, an engine), or fails it under CI, where
// .ci/run provides everything.
func Unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	why := fmt.Sprintf(format, args...)
	if InCI() {
		tb.Fatalf("%s and CI=true: install it (see .ci/run)", why)
	}
	tb.Skipf("%s; skipping", why)
}

// FreePort returns a TCP port on host that was free a moment ago, for a
// program a test starts. It is taken at random below the kernel's range of
// ephemeral ports (ip_local_port_range), where no outgoing connection and
// no listener on port 0 can take it before the program binds it: with a
// port from port 0, a busy machine running test packages side by side
// sometimes gave it to another connection first.
func FreePort(tb testing.TB, host string) int {
	tb.Helper()
	port, err := PickPort(host)
	if err != nil {
		tb.Fatal(err)
	}
	return port
}

// PickPort is FreePort for programs without a testing.TB (benchmarks): it
// returns the port, or an error when none of 100 tried was free.
func PickPort(host string) (int, error) {
	lo := ephemeralLow()
	span := min(lo-1024, 12000)
	for range 100 {
		port := lo - 1 - rand.IntN(span)
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("free port on %s: none of 100 tried below %d", host, lo)
}

// ephemeralLow returns the lowest port of the kernel's ephemeral range,
// or Linux's default where it cannot be read. It reads it once.
var ephemeralLow = sync.OnceValue(func() int {
	const linuxDefault = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return linuxDefault
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return linuxDefault
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= 2048 {
		return linuxDefault
	}
	return n
})
