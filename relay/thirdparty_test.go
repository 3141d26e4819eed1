package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// exchangeJS connects to url with subprotocols v1.echo and v2.echo, sends a
// text and a binary message, asks the node to close with 4001 "bye", and
// calls report with what it saw. It runs unchanged in a browser and in
// Node.js.
const exchangeJS = `
function exchange(url, report) {
  const seen = {messages: []};
  const ws = new WebSocket(url, ["v1.echo", "v2.echo"]);
  ws.binaryType = "arraybuffer";
  ws.onopen = () => { seen.protocol = ws.protocol; };
  ws.onmessage = (ev) => {
    if (typeof ev.data === "string") {
      seen.messages.push({type: "text", data: ev.data});
    } else {
      seen.messages.push({type: "binary", data: Array.from(new Uint8Array(ev.data))});
    }
    switch (seen.messages.length) {
      case 1: ws.send("hello"); break;
      case 2: ws.send(new Uint8Array([1, 2, 3, 250])); break;
      case 3: ws.send("close 4001 bye"); break;
    }
  };
  ws.onerror = () => { seen.error = true; };
  ws.onclose = (ev) => { seen.closeCode = ev.code; seen.closeReason = ev.reason; report(seen); };
}
`

// exchangeResult is what exchangeJS reports.
type exchangeResult struct {
	Protocol string `json:"protocol"`
	Messages []struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	} `json:"messages"`
	Error       bool   `json:"error"`
	CloseCode   int    `json:"closeCode"`
	CloseReason string `json:"closeReason"`
}

func (r exchangeResult) check(t *testing.T) {
	t.Helper()
	var got []string
	for _, m := range r.Messages {
		got = append(got, m.Type+" "+string(m.Data))
	}
	want := []string{`text "node=b"`, `text "hello"`, `binary [1,2,3,250]`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("client received\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r.Protocol != "v2.echo" || r.CloseCode != 4001 || r.CloseReason != "bye" || r.Error {
		t.Errorf("client saw protocol %q, close %d %q, error %v; want v2.echo, 4001 bye, no error",
			r.Protocol, r.CloseCode, r.CloseReason, r.Error)
	}
}

// behindNginx starts nodes a and b, each behind chi with RealIP in front of
// the relay, and nginx balancing over a alone, so that a client of nginx
// asking for node b goes nginx → a → relay → b. Node a also serves /page
// (a browser page running exchangeJS) and takes the page's report at
// /result.
func behindNginx(t *testing.T) (ngx *testbin.Nginx, b *testNode, results chan exchangeResult) {
	t.Helper()
	testbin.Need(t, "nginx")
	results = make(chan exchangeResult, 1)
	dir := &dirMap{}
	start := func(id string) *testNode {
		n := newNode(t, id, dir)
		r := chi.NewRouter()
		r.Use(middleware.RealIP, n.relay.Middleware)
		r.Get("/page", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<!doctype html><title>relay</title><script>%s
exchange("ws://" + location.host + "/ws?node=b", (seen) =>
  fetch("/result", {method: "POST", body: JSON.stringify(seen)}));
</script>`, exchangeJS)
		})
		r.Post("/result", func(w http.ResponseWriter, r *http.Request) {
			var res exchangeResult
			if err := json.NewDecoder(r.Body).Decode(&res); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			select {
			case results <- res:
			default:
			}
		})
		r.Mount("/", n.mux())
		n.srv = httptest.NewServer(r)
		n.finish(t, dir)
		return n
	}
	a := start("a")
	b = start("b")
	ngx = testbin.StartNginx(t, a.addr)
	return ngx, b, results
}

// checkRelayedAtB checks what b's handler saw of a client that came through
// nginx and a.
func checkRelayedAtB(t *testing.T, ngx *testbin.Nginx, b *testNode) {
	t.Helper()
	got := recv(t, b.seen, "request at b")
	// a's RealIP took nginx's X-Real-IP (a bare IP, hence port 0); the
	// Host is the one the client sent to nginx.
	if !got.Relayed || got.RemoteAddr != "127.0.0.1:0" || got.Host != ngx.Addr || got.Scheme != "http" {
		t.Errorf("b saw %+v; want relayed from 127.0.0.1:0 for host %s over http", got, ngx.Addr)
	}
	if got.Subprotocol != "v2.echo" {
		t.Errorf("b chose subprotocol %q, want v2.echo", got.Subprotocol)
	}
}

// nodeWebSocketArgs returns the node arguments that give the script a
// global WebSocket: none on Node.js 22 and later, a flag on Node.js 20.
func nodeWebSocketArgs(t *testing.T, bin string) []string {
	t.Helper()
	for _, args := range [][]string{nil, {"--experimental-websocket"}} {
		cmd := exec.Command(bin, append(args, "-e", `process.exit(typeof WebSocket === "function" ? 0 : 1)`)...)
		if cmd.Run() == nil {
			return args
		}
	}
	if testbin.InCI() {
		t.Fatalf("%s has no WebSocket client", bin)
	}
	t.Skipf("%s has no WebSocket client", bin)
	return nil
}

func TestThirdPartyNodeClientThroughNginx(t *testing.T) {
	t.Parallel()
	bin := testbin.Need(t, "node")
	args := nodeWebSocketArgs(t, bin)
	ngx, b, _ := behindNginx(t)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	script := exchangeJS + `exchange(process.argv[1], (seen) => { console.log(JSON.stringify(seen)); process.exit(0); });`
	url := "ws://" + ngx.Addr + "/ws?node=b"
	cmd := exec.CommandContext(ctx, bin, append(args, "-e", script, url)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s\nnginx: %s", err, stderr.String(), ngx.ErrorLog())
	}
	var res exchangeResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node printed %q: %v", out, err)
	}
	res.check(t)
	checkRelayedAtB(t, ngx, b)
}

func TestThirdPartyBrowserThroughNginx(t *testing.T) {
	t.Parallel()
	ngx, b, results := behindNginx(t)
	browser := testbin.StartChromium(t, "http://"+ngx.Addr+"/page")

	select {
	case res := <-results:
		res.check(t)
	case <-time.After(60 * time.Second):
		t.Fatalf("no report from the browser page\nbrowser: %s\nnginx: %s", tail(browser.Output(), 2000), ngx.ErrorLog())
	}
	checkRelayedAtB(t, ngx, b)
	// The browser sent an Origin; b's own origin check passed because the
	// relay restored the Host the browser asked for.
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
