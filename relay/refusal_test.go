package relay

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
)

// logLines is a slog handler's output, safe for concurrent use.
type logLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// warnings returns the lines logged at level WARN that contain all of
// want.
func (l *logLines) warnings(want ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for line := range strings.Lines(l.b.String()) {
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
func withLog(lines *logLines) nodeOpt {
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
	var lines logLines
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
	if w := lines.warnings(); len(w) != 0 {
		t.Errorf("refusals of the client logged as warnings:\n%s", strings.Join(w, "\n"))
	}
	// The relay still serves what the node accepts.
	if c, served := dial(t, a, "/ws?node=b", dialOpts{}); served != "b" {
		t.Errorf("served by %q, want b", served)
	} else {
		c.CloseNow()
	}
}
