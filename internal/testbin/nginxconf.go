package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// StartNginxConfig starts nginx with the configuration that conf returns
// for a new directory dir, waits until addr (host:port, where the
// configuration listens) accepts connections, and stops nginx when the test
// ends. The configuration must keep every file nginx writes under dir
// (nginx runs with -p dir, so relative paths are) and must not daemonize.
// As root it gets a "user root;" line, since workers running as nobody
// could not reach dir. It skips the test when nginx is missing (fails under
// CI).
func StartNginxConfig(tb testing.TB, addr string, conf func(dir string) string) *Nginx {
	tb.Helper()
	bin := Need(tb, "nginx")
	dir := tb.TempDir()
	text := conf(dir)
	if os.Geteuid() == 0 {
		text = "user root;\n" + text
	}
	file := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		tb.Fatalf("nginx: write config: %v", err)
	}
	n := &Nginx{Addr: addr, Dir: dir}
	cmd := exec.Command(bin, "-p", dir, "-c", file, "-e", filepath.Join(dir, "error.log"))
	cmd.Stdout, cmd.Stderr = &n.out, &n.out
	// Own process group, so Stop reaches the workers too; killed with us.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("nginx: start: %v", err)
	}
	n.cmd = cmd
	tb.Cleanup(n.Stop)
	if err := WaitDial(addr, 10*time.Second); err != nil {
		n.Stop()
		tb.Fatal(fmt.Errorf("nginx on %s: %w\n%s%s", addr, err, n.out.String(), n.ErrorLog()))
	}
	return n
}
