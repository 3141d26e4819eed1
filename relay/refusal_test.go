package relay

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// warnings returns the lines of log logged at level WARN that contain
// all of want.
func warnings(log *testbin.Buffer, want ...string) []string {
	var out []string
	for line := range strings.Lines(log.String()) {
		if !strings.Contains(line, "level=WARN") {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(line, w)
		}
		if ok {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// withLog makes the node log to lines, debug lines included.
func withLog(lines *testbin.Buffer) nodeOpt {
	return func(n *nodeSettings) {
		prev := n.setup
		n.setup = func(rl *Relay) {
			if prev != nil {
				prev(rl)
			}
			rl.log = slog.New(slog.NewTextHandler(lines, &slog.HandlerOptions{Level: slog.LevelDebug})).With("component", "relay")
		}
	}
}

// upgrade sends a WebSocket upgrade for path to n with header, and returns
// the response, its body read.
func upgrade(t *testing.T, n *testNode, path string, header http.Header) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws://"+n.addr+path, &websocket.DialOptions{HTTPHeader: header})
	if err == nil {
		c.CloseNow()
		t.Fatalf("upgrade %s at %s accepted, want a refusal", path, n.id)
	}
	if resp == nil {
		t.Fatalf("upgrade %s at %s: %v, want an HTTP answer", path, n.id, err)
	}
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// TestNodeRefusalPassedOn: when the target node refuses the client with a
// 4xx (a foreign Origin, an address over its limit), the client gets the
// node's answer; it is not served here, not counted as a fallback and not
// logged as a failure of the node. A stranger repeating such upgrades
// used to log a warning blaming the node for each.
func TestNodeRefusalPassedOn(t *testing.T) {
	t.Parallel()
	dir := &dirMap{}
	var lines testbin.Buffer
	a := startNode(t, "a", dir, withLog(&lines))
	startNode(t, "b", dir)
	limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		http.Error(w, "too many connections", http.StatusTooManyRequests)
	}))
	t.Cleanup(limited.Close)
	dir.set("limited", limited.Listener.Addr().String())

	for range 3 {
		resp, body := upgrade(t, a, "/ws?node=limited", nil)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "7" || body != "too many connections\n" {
			t.Fatalf("a node's 429 reached the client as %d, Retry-After %q, body %q; want 429, 7, the node's body",
				resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	// b's WebSocket refuses an Origin that is not its Host (a would too:
	// the stats and the log tell who answered).
	resp, _ := upgrade(t, a, "/ws?node=b", http.Header{"Origin": {"https://elsewhere.example"}})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a foreign Origin at b answered %d, want b's 403", resp.StatusCode)
	}
	if st := a.relay.Stats(); st.Fallbacks != 0 || st.Refused != 4 || st.Relayed != 0 {
		t.Errorf("stats of a = %+v, want 4 refused and no fallback", st)
	}
	if w := warnings(&lines); len(w) != 0 {
		t.Errorf("refusals of the client logged as warnings:\n%s", strings.Join(w, "\n"))
	}
	// The relay still serves what the node accepts.
	if c, served := dial(t, a, "/ws?node=b", dialOpts{}); served != "b" {
		t.Errorf("served by %q, want b", served)
	} else {
		c.CloseNow()
	}
}

// TestRelayFailureLogLimited: a node that cannot be relayed to is logged
// once per minute, with the count of the failures not logged since; each
// node on its own. A stranger repeating upgrades for a dead node used to
// make a warning each.
func TestRelayFailureLogLimited(t *testing.T) {
	t.Parallel()
	dir := &dirMap{}
	var lines testbin.Buffer
	var skew atomic.Int64 // added to a's clock
	clock := func(n *nodeSettings) {
		n.setup = func(rl *Relay) { rl.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) } }
	}
	a := startNode(t, "a", dir, clock, withLog(&lines))
	dir.set("dead", deadAddr(t))
	dir.set("gone", deadAddr(t))

	for range 5 {
		servesItself(t, a, "/ws?node=dead", "node dead")
	}
	servesItself(t, a, "/ws?node=gone", "node gone")
	if st := a.relay.Stats(); st.Fallbacks != 6 {
		t.Fatalf("stats of a = %+v, want 6 fallbacks", st)
	}
	dead := warnings(&lines, "relay to node failed", "node_id=dead")
	if len(dead) != 1 || !strings.Contains(dead[0], "suppressed=0") {
		t.Fatalf("5 failures for dead logged\n%s\nwant one line", strings.Join(dead, "\n"))
	}
	if gone := warnings(&lines, "relay to node failed", "node_id=gone"); len(gone) != 1 {
		t.Fatalf("a failure for another node logged\n%s\nwant a line of its own", strings.Join(gone, "\n"))
	}

	skew.Store(int64(failLogEvery))
	servesItself(t, a, "/ws?node=dead", "node dead a minute later")
	dead = warnings(&lines, "relay to node failed", "node_id=dead")
	if len(dead) != 2 || !strings.Contains(dead[1], "suppressed=4") {
		t.Fatalf("a failure a minute later logged\n%s\nwant a second line counting the 4 not logged", strings.Join(dead, "\n"))
	}
}

// TestFailLogBounded: the failure log forgets nodes whose last line is a
// minute old once it remembers maxFailLogNodes, so ids that come and go
// cannot grow it for ever.
func TestFailLogBounded(t *testing.T) {
	t.Parallel()
	var f failLog
	t0 := time.Unix(1_800_000_000, 0)
	for i := range maxFailLogNodes {
		if log, _ := f.failed(strconv.Itoa(i), t0); !log {
			t.Fatalf("first failure of node %d not logged", i)
		}
	}
	if log, _ := f.failed("0", t0.Add(time.Second)); log {
		t.Fatal("a second failure within the minute logged")
	}
	if log, n := f.failed("new", t0.Add(failLogEvery)); !log || n != 0 || len(f.nodes) != 1 {
		t.Fatalf("a new node a minute later: logged %v, %d suppressed, %d nodes remembered; want logged, 0, 1", log, n, len(f.nodes))
	}
}
