package fleetproc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/muster-gg/muster/internal/testkit/testbin"
	"go.uber.org/goleak"
)

// duelPkg is the example the fleet runs, relative to the module root.
const duelPkg = "./examples/duel"

// Main is a TestMain for a suite that builds the server: it creates a
// temporary directory whose name starts with prefix, stores its path in
// *dir for Build, runs the tests, fails the run when they passed but left
// goroutines behind (goleak), removes the directory and exits.
//
// Suites that run fleets of real processes (e2e, soak) take turns: go test
// runs packages side by side, and two fleets of servers, nginx and bots at
// once on a small machine starve each other's servers past the bots'
// timeouts. The first test of a suite that starts processes (Start, or
// TakeTurn) waits for an exclusive lock on a file in the temporary
// directory, which Main lets go when the suite ends; a suite whose tests
// all skip, for want of nginx or redis-server, does not wait.
func Main(m *testing.M, prefix string, dir *string) {
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*dir = d
	code := m.Run()
	if turn.unlock != nil {
		turn.unlock()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.RemoveAll(d)
	os.Exit(code)
}

// Root returns the module's root directory, the parent of the test's
// package directory (the suites sit one level below it).
func Root(tb testing.TB) string {
	tb.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		tb.Fatalf("module root: %v", err)
	}
	return dir
}

// Build builds the duel example into dir/duel, with the race detector when
// race is true, and returns the binary's path. It returns the build's
// output with the error.
func Build(tb testing.TB, dir string, race bool) (string, error) {
	tb.Helper()
	return BuildExample(tb, dir, duelPkg, race)
}

// BuildExample builds the example pkg (relative to the module root, such
// as ./examples/rps) into dir, named after pkg's last element, as Build
// builds the duel.
func BuildExample(tb testing.TB, dir, pkg string, race bool) (string, error) {
	tb.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	if buildTags != "" {
		args = append(args, "-tags", buildTags)
	}
	cmd := exec.Command(goBin, append(args, pkg)...)
	cmd.Dir = Root(tb)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

// turn is the suite's turn among the fleet suites: taken by the first test
// that needs it, given back by Main.
var turn struct {
	once   sync.Once
	unlock func()
	err    error
}

// TakeTurn waits until no other fleet suite (e2e, soak) runs, the first
// time a suite calls it, and keeps the turn until the suite ends. A test
// that starts processes calls it once it knows it will not skip; Start
// does.
func TakeTurn(tb testing.TB) {
	tb.Helper()
	turn.once.Do(func() { turn.unlock, turn.err = takeTurn() })
	if turn.err != nil {
		tb.Fatalf("fleetproc: %v", turn.err)
	}
}

// takeTurn waits for the lock the fleet suites share and returns its
// release. The lock is the kernel's (flock), so a suite that dies releases
// it.
func takeTurn() (unlock func(), err error) {
	return testbin.LockFile(filepath.Join(os.TempDir(), "muster-fleet-suites.lock"))
}
