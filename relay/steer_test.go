package relay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// upgradeRequest is a WebSocket upgrade with request target target, as a
// client would write it on the wire.
func upgradeRequest(target, host string) string {
	return "GET " + target + " HTTP/1.1\r\n" +
		"Host: " + host + "\r\n" +
		"Upgrade: websocket\r\n" +
		"Connection: Upgrade\r\n" +
		"Sec-WebSocket-Version: 13\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
		"Cookie: session=s3cret\r\n" +
		"\r\n"
}

// TestRelayRefusesNonOriginForm sends request lines that name another host
// in their target straight to a server, over a raw TCP connection, and
// checks that each is refused with 400 and that nothing reaches the host
// they name: only a live node's internal address may ever be dialled.
func TestRelayRefusesNonOriginForm(t *testing.T) {
	a, _ := startPair(t)

	trap := newTrap(t)
	evil := trap.addr()

	cases := []struct {
		name, target string
		want         int
	}{
		{"origin form is relayed", "/ws?node=b", http.StatusSwitchingProtocols},
		{"opaque", "x:@" + evil + "/ws?node=b", http.StatusBadRequest},
		{"opaque ws", "ws:@" + evil + "/ws?node=b", http.StatusBadRequest},
		{"opaque with user info", "x:u:p@" + evil + "/ws?node=b", http.StatusBadRequest},
		{"absolute form", "http://" + evil + "/ws?node=b", http.StatusBadRequest},
		{"absolute form with user info", "ws://u@" + evil + "/ws?node=b", http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", a.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(waitFor)) // a failure deadline
			if _, err := c.Write([]byte(upgradeRequest(tc.target, a.addr))); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("GET %s: status %d, want %d", tc.target, resp.StatusCode, tc.want)
			}
			// Any dial happens before the response: by now a connection
			// to the trap is in its backlog, or there is none.
			if n := trap.connections(t); n != 0 {
				t.Fatalf("GET %s: %d connections reached %s", tc.target, n, evil)
			}
		})
	}
}

// trap is a listener that counts the connections made to it, and closes
// them once they have sent a byte.
type trap struct {
	l      net.Listener
	counts chan int // connections accepted before each marker
}

func newTrap(t *testing.T) *trap {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &trap{l: l, counts: make(chan int, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		n := 0
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			var b [1]byte
			_, _ = c.Read(b[:]) // a relay sends its request at once
			c.Close()
			if b[0] == 'M' {
				tr.counts <- n
				n = 0
			} else {
				n++
			}
		}
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return tr
}

func (tr *trap) addr() string { return tr.l.Addr().String() }

// connections returns how many connections other than its own reached the
// trap since the last call. A listener's backlog is first in, first out:
// when its own marker connection is accepted, every connection made
// before it has been.
func (tr *trap) connections(t *testing.T) int {
	t.Helper()
	c, err := net.Dial("tcp", tr.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("M")); err != nil {
		t.Fatal(err)
	}
	return recv(t, tr.counts, "the trap's count")
}

// FuzzRelayTarget feeds request targets and Host headers through the
// relay's request handling and checks that the only addresses it ever
// dials are live nodes' internal addresses.
func FuzzRelayTarget(f *testing.F) {
	for _, s := range []struct{ target, host string }{
		{"/ws?node=b", "play.example.com"},
		{"/ws?node=c", "play.example.com"},
		{"x:@127.0.0.1:19999/ws?node=b&ticket=t", "play.example.com"},
		{"ws:@127.0.0.1:19999/ws?node=b", "127.0.0.1:19999"},
		{"x:u:p@127.0.0.1:19999/ws?node=b", "play.example.com"},
		{"http://127.0.0.1:19999/ws?node=b", "127.0.0.1:19999"},
		{"ws://u:p@127.0.0.1:19999/ws?node=b", "play.example.com"},
		{"//127.0.0.1:19999/ws?node=b", "play.example.com"},
		{"/@127.0.0.1:19999/ws?node=b", "play.example.com"},
		{"/%2F%2F127.0.0.1:19999/ws?node=b", "play.example.com"},
		{"/ws?node=b#@127.0.0.1:19999", "play.example.com"},
		{"/ws?x=@127.0.0.1:19999&node=c", "u@127.0.0.1:19999"},
	} {
		f.Add(s.target, s.host)
	}
	live := map[string]string{"b": "10.77.0.1:7000", "c": "[fd00::7]:7000"}
	rl, err := New(Config{NodeID: "a", Secret: testSecret, DialTimeout: time.Second},
		DirectoryFunc(func(id string) (string, bool) { a, ok := live[id]; return a, ok }),
		slog.New(slog.DiscardHandler))
	if err != nil {
		f.Fatal(err)
	}
	var (
		mu     sync.Mutex
		dialed []string
	)
	rl.dialNet = func(_ context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, network+" "+addr)
		mu.Unlock()
		return nil, errors.New("test: not dialling")
	}
	h := rl.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))

	f.Fuzz(func(t *testing.T, target, host string) {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(upgradeRequest(target, host))))
		if err != nil {
			return // the server would refuse it before any handler
		}
		r.RemoteAddr = "192.0.2.1:1234"
		mu.Lock()
		dialed = dialed[:0]
		mu.Unlock()
		h.ServeHTTP(httptest.NewRecorder(), r)
		mu.Lock()
		defer mu.Unlock()
		for _, d := range dialed {
			ok := false
			for _, addr := range live {
				ok = ok || d == "tcp "+addr
			}
			if !ok {
				t.Fatalf("GET %q (Host %q) dialled %s", target, host, d)
			}
		}
		if len(dialed) > 0 && !strings.HasPrefix(r.RequestURI, "/") {
			t.Fatalf("GET %q (Host %q) relayed a target that is not a path: %s", target, host, fmt.Sprint(dialed))
		}
	})
}
