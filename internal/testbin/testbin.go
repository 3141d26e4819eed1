// Package testbin finds and starts the outside programs that tests use
// (redis-server, nginx, chromium) on free loopback ports.
//
// A test that needs a program calls Need: when the program is not on PATH
// the test is skipped with a one-line reason, except when the environment
// says CI=true, where a missing program fails the test instead.
package testbin

import (
	"net"
	"os"
	"os/exec"
	"strconv"
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
	if InCI() {
		tb.Fatalf("%s is not on PATH and CI=true: install it (see .ci/run)", name)
	}
	tb.Skipf("%s is not on PATH; skipping", name)
	return ""
}

// FreePort returns a TCP port on host that was free a moment ago.
func FreePort(tb testing.TB, host string) int {
	tb.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		tb.Fatalf("free port on %s: %v", host, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
