package testbin

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Nginx is an nginx process started for a test or a benchmark: a reverse
// proxy on a loopback port that balances round robin, without sticky
// sessions, over a set of upstream servers and passes WebSocket upgrades
// through.
type Nginx struct {
	// Addr is the proxy's loopback address, host:port.
	Addr string
	// Dir holds the configuration, pid file, error log and temporary files.
	Dir string

	cmd  *exec.Cmd
	out  bytes.Buffer
	once sync.Once
}

// StartNginx starts nginx on a free loopback port in front of upstreams
// (host:port each) and stops it when the test ends.
func StartNginx(tb testing.TB, upstreams ...string) *Nginx {
	tb.Helper()
	bin := Need(tb, "nginx")
	n, err := LaunchNginx(bin, tb.TempDir(), FreePort(tb, "127.0.0.1"), upstreams...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(n.Stop)
	return n
}

// LaunchNginx starts the nginx binary bin on 127.0.0.1:port in front of
// upstreams, with every file it writes kept in dir. It is the part of
// StartNginx that needs no testing.TB, for benchmark programs; the caller
// must call Stop.
func LaunchNginx(bin, dir string, port int, upstreams ...string) (*Nginx, error) {
	if len(upstreams) == 0 {
		return nil, fmt.Errorf("nginx: no upstream")
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return runNginx(bin, dir, addr, NginxConfig(dir, port, upstreams...))
}

// runNginx writes conf to dir/nginx.conf, starts the nginx binary bin with
// it and every path under dir, and waits until addr accepts connections.
// The caller must call Stop.
func runNginx(bin, dir, addr, conf string) (*Nginx, error) {
	n := &Nginx{Addr: addr, Dir: dir}
	file := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		return nil, fmt.Errorf("nginx: write config: %w", err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", file, "-e", filepath.Join(dir, "error.log"))
	// Own process group, so Stop reaches the workers too.
	if err := StartChild(cmd, &n.out, true); err != nil {
		return nil, fmt.Errorf("nginx: start: %w", err)
	}
	n.cmd = cmd
	if err := WaitDial(addr, 10*time.Second); err != nil {
		n.Stop()
		return nil, fmt.Errorf("nginx on %s: %w\n%s%s", addr, err, n.out.String(), n.ErrorLog())
	}
	return n, nil
}

// NginxConfig returns the configuration LaunchNginx uses: one worker, no
// daemon, every path under dir, a round-robin upstream, and a location that
// proxies HTTP and WebSocket requests with the usual forwarding headers
// (X-Real-IP, X-Forwarded-For, X-Forwarded-Proto).
func NginxConfig(dir string, port int, upstreams ...string) string {
	var servers strings.Builder
	for _, u := range upstreams {
		fmt.Fprintf(&servers, "        server %s;\n", u)
	}
	user := ""
	if os.Geteuid() == 0 {
		// As root, workers would run as nobody and could not reach dir.
		user = "user root;\n"
	}
	return fmt.Sprintf(`%sdaemon off;
worker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;

events {
    worker_connections 4096;
}

http {
    access_log off;
    client_body_temp_path %[2]s/client_body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;

    map $http_upgrade $connection_upgrade {
        default upgrade;
        ''      close;
    }

    upstream muster {
%[3]s    }

    server {
        listen 127.0.0.1:%[4]d;
        location / {
            proxy_pass http://muster;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $http_host;
            proxy_set_header X-Real-IP $remote_addr;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_buffering off;
            proxy_read_timeout 1h;
            proxy_send_timeout 1h;
        }
    }
}
`, user, dir, servers.String(), port)
}

// Stop stops nginx (TERM to its process group, KILL if it lingers) and
// waits for it. It is safe to call more than once.
func (n *Nginx) Stop() {
	n.once.Do(func() {
		if n.cmd == nil {
			return
		}
		stopGroup(n.cmd)
	})
}

// ErrorLog returns what nginx wrote to its error log so far.
func (n *Nginx) ErrorLog() string {
	b, _ := os.ReadFile(filepath.Join(n.Dir, "error.log"))
	return string(b)
}

// PID returns the process id of nginx's master process; its workers are
// its children.
func (n *Nginx) PID() int { return n.cmd.Process.Pid }

// Reload sends nginx's master process SIGHUP: it rereads its
// configuration and starts new workers, and the old ones finish the
// connections they hold. There is no SIGHUP to send on Windows: Reload
// returns an error there.
func (n *Nginx) Reload() error { return n.cmd.Process.Signal(syscall.SIGHUP) }
