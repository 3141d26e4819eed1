package testbin

import (
	"os"
	"testing"
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
	n, err := runNginx(bin, dir, addr, text)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(n.Stop)
	return n
}
