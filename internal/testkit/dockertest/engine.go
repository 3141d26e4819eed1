package dockertest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// NeedEngine returns once the docker CLI, its compose plugin and a Docker
// engine answer. When no engine answers and this process may start one
// (root, dockerd on PATH), it starts dockerd and stops it when the test
// ends; an engine that was running is left alone. Whatever is missing
// skips the test, or fails it under CI.
func NeedEngine(t testing.TB) {
	t.Helper()
	testbin.Need(t, "docker")
	if out, err := docker(context.Background(), nil, "compose", "version"); err != nil {
		testbin.Unavailable(t, "the docker compose plugin is missing (%v: %s); .ci/run builds it", err, firstLine(out))
	}
	if answers() {
		return
	}
	dockerd, err := exec.LookPath("dockerd")
	if err != nil || os.Geteuid() != 0 {
		testbin.Unavailable(t, "no Docker engine answers, and dockerd cannot be started here (on PATH: %v, root: %v)", err == nil, os.Geteuid() == 0)
	}
	startDockerd(t, dockerd)
}

// answers reports whether a Docker engine answers the CLI.
func answers() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := docker(ctx, nil, "version", "--format", "{{.Server.Version}}")
	return err == nil
}

// startDockerd starts dockerd, waits up to a minute until it answers, and
// stops it when the test ends: SIGTERM, which stops its containers, and
// SIGKILL after 30 s.
func startDockerd(t testing.TB, bin string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "dockerd.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	if err := testbin.StartChild(cmd, log, true); err != nil {
		log.Close()
		t.Fatalf("start dockerd: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Errorf("dockerd did not stop within 30s of SIGTERM; killed")
			_ = testbin.SignalGroup(cmd.Process, syscall.SIGKILL)
			<-exited
		}
	})
	deadline := time.Now().Add(time.Minute)
	for !answers() {
		select {
		case <-exited:
			data, _ := os.ReadFile(logPath)
			testbin.Unavailable(t, "dockerd exited at start: %s", lastLines(string(data), 5))
		default:
		}
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(logPath)
			t.Fatalf("dockerd does not answer after a minute:\n%s", lastLines(string(data), 20))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("started dockerd (pid %d) for this test", cmd.Process.Pid)
}

// docker runs the docker CLI with args and the environment env (added to
// this process's), and returns its standard output and error together.
func docker(ctx context.Context, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("docker %s: %w", strings.Join(args, " "), err)
	}
	return out.String(), err
}

// firstLine returns the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
