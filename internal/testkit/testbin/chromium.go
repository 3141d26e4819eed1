package testbin

import (
	"os/exec"
	"sync"
	"testing"
)

// ChromiumFlags are the flags headless Chromium needs on these machines:
// no sandbox (tests run as root), no GPU, and none of the background
// connections that a closed network refuses.
var ChromiumFlags = []string{
	"--headless",
	"--no-sandbox",
	"--disable-gpu",
	"--disable-quic",
	"--no-first-run",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	"--disable-dev-shm-usage",
}

// Chromium is a headless Chromium showing one page.
type Chromium struct {
	cmd  *exec.Cmd
	out  Buffer
	once sync.Once
}

// StartChromium opens url in headless Chromium with a new empty profile and
// stops the browser when the test ends. The page runs until then; a test
// learns what it did from the requests it makes.
func StartChromium(tb testing.TB, url string) *Chromium {
	tb.Helper()
	bin := ChromiumPath(tb)
	args := append(append([]string(nil), ChromiumFlags...), "--user-data-dir="+tb.TempDir(), url)
	c := &Chromium{cmd: exec.Command(bin, args...)}
	if err := StartChild(c.cmd, &c.out, true); err != nil {
		tb.Fatalf("start %s: %v", bin, err)
	}
	tb.Cleanup(c.Stop)
	return c
}

// Output returns what the browser printed so far.
func (c *Chromium) Output() string { return c.out.String() }

// Stop kills the browser and every process it started, and waits for it.
// It is safe to call more than once.
func (c *Chromium) Stop() {
	c.once.Do(func() { stopGroup(c.cmd) })
}
