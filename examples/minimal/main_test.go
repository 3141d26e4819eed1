package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testbin"
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

	var players []*websocket.Conn
	for range 2 {
		c := connect(ctx, t, base)
		send(ctx, t, c, "queue", map[string]string{"playlist": "race"})
		players = append(players, c)
	}
	for _, c := range players {
		await(ctx, t, c, "room")
		await(ctx, t, c, "state")
	}
	for _, c := range players {
		for range 10 {
			send(ctx, t, c, "input", 1)
		}
	}
	for i, c := range players {
		var winners []any
		for p := await(ctx, t, c, "winner", "room_end"); p["type"] == "winner"; p = await(ctx, t, c, "winner", "room_end") {
			winners = append(winners, p["player"])
		}
		if len(winners) != 1 || winners[0] == nil {
			t.Errorf("player %d was told of winners %v, want one", i, winners)
		}
		c.Close(websocket.StatusNormalClosure, "")
	}
}

// connect gets a guest ticket, connects and says hello.
func connect(ctx context.Context, t *testing.T, base string) *websocket.Conn {
	resp, err := http.Post(base+"/ticket", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	var tk struct{ Ticket string }
	json.NewDecoder(resp.Body).Decode(&tk)
	resp.Body.Close()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/play?ticket="+tk.Ticket, nil)
	if err != nil {
		t.Fatal(err)
	}
	send(ctx, t, c, "hello", map[string]string{"mode": "new"})
	await(ctx, t, c, "welcome")
	return c
}

func send(ctx context.Context, t *testing.T, c *websocket.Conn, typ string, data any) {
	b, _ := json.Marshal(map[string]any{"type": typ, "data": data})
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// await reads packets until one of the types typ.
func await(ctx context.Context, t *testing.T, c *websocket.Conn, typ ...string) map[string]any {
	t.Helper()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %q: %v", typ, err)
		}
		var p map[string]any
		if json.Unmarshal(b, &p) == nil && slices.Contains(typ, fmt.Sprint(p["type"])) {
			return p
		}
	}
}
