package dockertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Exit is a container's exit as the engine reported it.
type Exit struct {
	// ID and Name are the container's.
	ID, Name string
	// Code is its exit code (137 for SIGKILL).
	Code int
	// At is when the engine saw it exit.
	At time.Time
}

// Events records the exits of a project's containers from the engine's
// event stream, from Watch until the test ends: compose removes the
// containers it scales down, and their exit codes stay here.
type Events struct {
	mu    sync.Mutex
	exits []Exit
	seen  chan struct{} // closed and replaced at each exit
}

// Watch starts recording the exits of project p's containers; it returns
// once the engine streams the project's events.
func (p *Project) Watch(t testing.TB) *Events {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "docker", "events", "--format", "{{json .}}",
		"--filter", "type=container", "--filter", "event=die",
		"--filter", "label=com.docker.compose.project="+p.Name)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("docker events: %v", err)
	}
	e := &Events{seen: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			e.add(sc.Bytes())
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = cmd.Wait()
	})
	return e
}

// add records one event line of docker events.
func (e *Events) add(line []byte) {
	var ev struct {
		ID       string `json:"id"`
		TimeNano int64  `json:"timeNano"`
		Actor    struct {
			Attributes map[string]string `json:"Attributes"`
		} `json:"Actor"`
	}
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	code, err := strconv.Atoi(ev.Actor.Attributes["exitCode"])
	if err != nil {
		code = -1
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.exits = append(e.exits, Exit{ID: ev.ID, Name: ev.Actor.Attributes["name"], Code: code, At: time.Unix(0, ev.TimeNano)})
	close(e.seen)
	e.seen = make(chan struct{})
}

// Exit waits until container id (a full id or its prefix) has exited, or
// ctx ends, and returns its last exit.
func (e *Events) Exit(ctx context.Context, id string) (Exit, error) {
	for {
		e.mu.Lock()
		seen := e.seen
		for i := len(e.exits) - 1; i >= 0; i-- {
			if strings.HasPrefix(e.exits[i].ID, id) {
				x := e.exits[i]
				e.mu.Unlock()
				return x, nil
			}
		}
		e.mu.Unlock()
		select {
		case <-seen:
		case <-ctx.Done():
			return Exit{}, ctx.Err()
		}
	}
}

// Follow copies the output of container id (a game server's log) from now
// until it exits or the test ends, and returns a function that returns it
// so far: compose removes the containers it scales down, and their logs
// with them.
func (p *Project) Follow(t testing.TB, id string) func() string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "docker", "logs", "--follow", "--timestamps", id)
	buf := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = buf, buf
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("docker logs %s: %v", id, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return buf.String
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
