package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// The README's "A minimal game" is this program, as it stands.
func TestREADMEShowsThisProgram(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, []byte("```go\n"+string(src)+"```\n")) {
		t.Fatal("README.md does not show examples/minimal/main.go verbatim in a ```go block: copy the file into it")
	}
}

// The program runs as a process with no config.yml, and two players who
// queue are matched and see their room step. Both tap ten times between
// two steps (one step a second): the first tenth tap wins, and the race has
// one winner, not two.
func TestMinimalGamePlays(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example")
	}
	bin := filepath.Join(t.TempDir(), "minimal")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	port := testbin.FreePort(t, "127.0.0.1")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // a bound for a stuck run, not a measure
	defer cancel()
	cmd := exec.Command(bin)
	cmd.Dir = t.TempDir() // no config.yml here
	cmd.Env = append(os.Environ(), "MUSTER__SERVER__HTTP__HOST=127.0.0.1", "MUSTER__SERVER__HTTP__PORT="+strconv.Itoa(port), "MUSTER__ROOM__RATE=1")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		if err := <-exited; err != nil {
			t.Errorf("the server exited with %v after SIGINT; its log:\n%s", err, logs.String())
		}
	}()
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	for {
		resp, err := http.Get(base + "/muster/server/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("the server exited: %v\n%s", err, logs.String())
		case <-ctx.Done():
			t.Fatalf("not ready: %v\n%s", err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}

	var players []*playtest.Conn
	for range 2 {
		c := connect(t, base)
		c.Send("queue", map[string]string{"playlist": "race"})
		players = append(players, c)
	}
	for _, c := range players {
		c.Next("room")
		c.Next("state")
	}
	for _, c := range players {
		for range 10 {
			c.Send("input", 1)
		}
	}
	winnerOrEnd := func(p map[string]any) bool { return p["type"] == "winner" || p["type"] == "room_end" }
	for i, c := range players {
		var winners []any
		for p := c.NextWhere("a winner or the room's end", winnerOrEnd); p["type"] == "winner"; p = c.NextWhere("a winner or the room's end", winnerOrEnd) {
			winners = append(winners, p["player"])
		}
		if len(winners) != 1 || winners[0] == nil {
			t.Errorf("player %d was told of winners %v, want one", i, winners)
		}
		c.Close(websocket.StatusNormalClosure, "")
	}
}

// connect gets a guest ticket, connects and says hello.
func connect(t *testing.T, base string) *playtest.Conn {
	t.Helper()
	resp, err := http.Post(base+"/ticket", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	var tk struct{ Ticket string }
	json.NewDecoder(resp.Body).Decode(&tk)
	resp.Body.Close()
	c := playtest.DialPlay(t, base, "ticket="+tk.Ticket)
	c.Welcome("new")
	return c
}
