package relay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testSecret = "test-secret-0123456789abcdef"

// waitFor bounds every wait in these tests; it is a failure deadline, never
// a measurement.
const waitFor = 10 * time.Second

// dirMap is a Directory backed by a map.
type dirMap struct {
	mu sync.Mutex
	m  map[string]string
}

func (d *dirMap) InternalAddress(id string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a, ok := d.m[id]
	return a, ok
}

func (d *dirMap) set(id, addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = make(map[string]string)
	}
	d.m[id] = addr
}

// seen is what a test node's handler saw of a request.
type seen struct {
	Path         string
	RemoteAddr   string
	Host         string
	Scheme       string
	Relayed      bool
	RelayHeaders []string
	Offered      []string
	Subprotocol  string
	Cookie       string
	Origin       string
	ForwardedFor string
}

func see(r *http.Request) seen {
	s := seen{
		Path:       r.URL.Path,
		RemoteAddr: r.RemoteAddr,
		Host:       r.Host,
		Scheme:     ClientScheme(r),
		Relayed:    FromRelay(r),
		Offered:    subprotocols(r.Header),
		Cookie:     r.Header.Get("Cookie"),
		Origin:     r.Header.Get("Origin"),

		ForwardedFor: strings.Join(r.Header.Values("X-Forwarded-For"), ", "),
	}
	for name := range r.Header {
		if hasRelayPrefix(name) {
			s.RelayHeaders = append(s.RelayHeaders, name)
		}
	}
	return s
}

// receiver returns relay b, with secret and its clock at now, in front of
// a handler that notes what it sees, and serve, which sends the relay a
// request for target from the next hop (127.0.0.2:41000) with header and
// returns what the handler saw of it: the zero seen if it saw nothing.
func receiver(t *testing.T, secret string, now time.Time) (rl *Relay, serve func(target string, header http.Header) seen) {
	t.Helper()
	rl, err := New(Config{NodeID: "b", Secret: secret}, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	rl.now = func() time.Time { return now }
	var got seen
	h := rl.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = see(r) }))
	return rl, func(target string, header http.Header) seen {
		req := httptest.NewRequest(http.MethodGet, "http://game.internal:8000"+target, nil)
		req.RemoteAddr = "127.0.0.2:41000"
		for k, v := range header {
			req.Header[k] = slices.Clone(v)
		}
		got = seen{}
		h.ServeHTTP(httptest.NewRecorder(), req)
		return got
	}
}

// testNode is one server: a relay in front of an echo handler.
type testNode struct {
	id    string
	relay *Relay
	srv   *httptest.Server
	addr  string // host:port
	seen  chan seen
	ends  chan websocket.CloseError // how each WebSocket ended, as the handler read it
	// streamed has, for each "stream" command, how many messages it sent.
	streamed chan int
	tls      bool // serves TLS
}

// nodeSettings are what a nodeOpt can change before the node starts.
type nodeSettings struct {
	cfg          Config
	probeTimeout time.Duration
	stallTimeout time.Duration
	noLoop       bool
	tls          bool
	setup        func(*Relay) // changes the relay before it serves
}

type nodeOpt func(*nodeSettings)

func withSecret(s string) nodeOpt              { return func(n *nodeSettings) { n.cfg.Secret = s } }
func withReadLimit(l int64) nodeOpt            { return func(n *nodeSettings) { n.cfg.ReadLimit = l } }
func withProbeTimeout(d time.Duration) nodeOpt { return func(n *nodeSettings) { n.probeTimeout = d } }
func withDialTimeout(d time.Duration) nodeOpt  { return func(n *nodeSettings) { n.cfg.DialTimeout = d } }
func withStallTimeout(d time.Duration) nodeOpt { return func(n *nodeSettings) { n.stallTimeout = d } }

// withTLS has the node serve TLS.
func withTLS() nodeOpt { return func(n *nodeSettings) { n.tls = true } }

// withoutLoop keeps the node's relayed sessions on their pumps' goroutines.
func withoutLoop() nodeOpt { return func(n *nodeSettings) { n.noLoop = true } }

// startNode starts node id on loopback, using dir to find others and
// registering itself in it. It is stopped when the test ends.
func startNode(t *testing.T, id string, dir *dirMap, opts ...nodeOpt) *testNode {
	t.Helper()
	n := newNode(t, id, dir, opts...)
	serve := httptest.NewServer
	if n.tls {
		serve = httptest.NewTLSServer
	}
	n.srv = serve(n.relay.Middleware(n.mux()))
	n.finish(t, dir)
	return n
}

func newNode(t *testing.T, id string, dir *dirMap, opts ...nodeOpt) *testNode {
	t.Helper()
	// A generous dial timeout: a loaded CI machine must not turn a relay
	// into a fallback. Tests of the timeout itself set a short one.
	set := nodeSettings{cfg: Config{NodeID: id, Secret: testSecret, DialTimeout: 5 * time.Second}}
	for _, o := range opts {
		o(&set)
	}
	var d Directory
	if dir != nil {
		d = dir
	}
	rl, err := New(set.cfg, d, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if set.probeTimeout != 0 {
		rl.probeTimeout = set.probeTimeout
	}
	if set.stallTimeout != 0 {
		rl.stallTimeout = set.stallTimeout
	}
	rl.noLoop = set.noLoop
	if set.setup != nil {
		set.setup(rl)
	}
	return &testNode{id: id, relay: rl, tls: set.tls, seen: make(chan seen, 64), ends: make(chan websocket.CloseError, 64), streamed: make(chan int, 64)}
}

func (n *testNode) finish(t *testing.T, dir *dirMap) {
	n.addr = n.srv.Listener.Addr().String()
	if dir != nil {
		dir.set(n.id, n.addr)
	}
	t.Cleanup(func() {
		if err := n.relay.Close(); err != nil {
			t.Errorf("close relay %s: %v", n.id, err)
		}
		n.srv.Close()
	})
}

func (n *testNode) record(s seen) {
	select {
	case n.seen <- s:
	default:
	}
}

func (n *testNode) ended(ce websocket.CloseError) {
	select {
	case n.ends <- ce:
	default:
	}
}

// mux serves /ws, an echo WebSocket that first says which node it is, and
// /who, which answers plain HTTP requests.
//
// Commands on /ws, as text messages: "close CODE REASON" closes with that
// status; "drop" closes the TCP connection without a close frame; "die"
// starts a 1 MiB binary message, sends half of it, and drops; "ping" pings
// the client and then says "ping ok" or "ping failed"; "stream" sends
// "s0", "s1", … for as long as it can, and then how many went out on
// testNode.streamed. Anything else is echoed with its type.
func (n *testNode) mux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/who", func(w http.ResponseWriter, r *http.Request) {
		s := see(r)
		n.record(s)
		fmt.Fprintf(w, "node=%s relayed=%v remote=%s", n.id, s.Relayed, s.RemoteAddr)
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		s := see(r)
		w.Header().Set("X-Node", n.id)
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"v2.echo", "v1.echo"}})
		if err != nil {
			return
		}
		var pings sync.WaitGroup
		defer pings.Wait()
		defer c.CloseNow()
		s.Subprotocol = c.Subprotocol()
		n.record(s)
		c.SetReadLimit(-1)
		ctx := context.Background()
		if err := c.Write(ctx, websocket.MessageText, []byte("node="+n.id)); err != nil {
			return
		}
		for {
			typ, b, err := c.Read(ctx)
			if err != nil {
				n.ended(closeErrorOf(err))
				return
			}
			if typ == websocket.MessageText {
				cmd := string(b)
				switch {
				case strings.HasPrefix(cmd, "close "):
					f := strings.SplitN(cmd, " ", 3)
					code, _ := strconv.Atoi(f[1])
					reason := ""
					if len(f) == 3 {
						reason = f[2]
					}
					_ = c.Close(websocket.StatusCode(code), reason)
					return
				case cmd == "ping":
					// Ping needs this loop to go on reading.
					pings.Go(func() {
						pctx, cancel := context.WithTimeout(ctx, waitFor)
						defer cancel()
						res := "ping ok"
						if err := c.Ping(pctx); err != nil {
							res = "ping failed"
						}
						_ = c.Write(ctx, websocket.MessageText, []byte(res))
					})
					continue
				case cmd == "stream":
					// Written beside this loop, which reads the close.
					pings.Go(func() {
						i := 0
						for c.Write(ctx, websocket.MessageText, []byte("s"+strconv.Itoa(i))) == nil {
							i++
						}
						n.streamed <- i
					})
					continue
				case cmd == "drop":
					_ = c.CloseNow()
					return
				case cmd == "die":
					wr, err := c.Writer(ctx, websocket.MessageBinary)
					if err != nil {
						return
					}
					_, _ = wr.Write(make([]byte, 512<<10))
					_ = c.CloseNow()
					return
				}
			}
			if err := c.Write(ctx, typ, b); err != nil {
				return
			}
		}
	})
	return mux
}

// closeErrorOf returns the close status carried by err, or 1006 when the
// connection ended without one.
func closeErrorOf(err error) websocket.CloseError {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return ce
	}
	return websocket.CloseError{Code: websocket.StatusAbnormalClosure}
}

// dialOpts are a test client's dial options.
type dialOpts struct {
	subprotocols []string
	header       http.Header
	host         string
	client       *http.Client
}

// dial connects a client to server n at path and returns the connection and
// the name of the node that served it (its first message).
func dial(t *testing.T, n *testNode, path string, o dialOpts) (*websocket.Conn, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	scheme := "ws://"
	if n.srv.TLS != nil {
		scheme = "wss://"
		if o.client == nil {
			o.client = n.srv.Client()
		}
	}
	c, _, err := websocket.Dial(ctx, scheme+n.addr+path, &websocket.DialOptions{
		HTTPClient:   o.client,
		HTTPHeader:   o.header,
		Host:         o.host,
		Subprotocols: o.subprotocols,
	})
	if err != nil {
		t.Fatalf("dial %s%s: %v", n.id, path, err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	c.SetReadLimit(-1)
	typ, b, err := c.Read(ctx)
	if err != nil || typ != websocket.MessageText || !strings.HasPrefix(string(b), "node=") {
		t.Fatalf("first message from %s%s: %v %q, %v", n.id, path, typ, b, err)
	}
	return c, strings.TrimPrefix(string(b), "node=")
}

// startPair starts nodes a, with opts, and b, each finding the other.
func startPair(t *testing.T, opts ...nodeOpt) (a, b *testNode) {
	t.Helper()
	dir := &dirMap{}
	return startNode(t, "a", dir, opts...), startNode(t, "b", dir)
}

// relayedVia starts nodes a, with opts, and b, and returns them with a
// client's connection to b relayed by a.
func relayedVia(t *testing.T, opts ...nodeOpt) (a, b *testNode, c *websocket.Conn) {
	t.Helper()
	a, b = startPair(t, opts...)
	c, _ = dial(t, a, "/ws?node=b", dialOpts{})
	return a, b, c
}

// dialRelayed dials a for b (/ws?node=b) with o and fails the test unless
// b serves the connection.
func dialRelayed(t *testing.T, a, b *testNode, o dialOpts) *websocket.Conn {
	t.Helper()
	c, served := dial(t, a, "/ws?node="+b.id, o)
	if served != b.id {
		t.Fatalf("served by %q, want %s", served, b.id)
	}
	return c
}

// servesItself checks that n serves a connection to path itself, when
// says at what point of the test.
func servesItself(t *testing.T, n *testNode, path, when string) {
	t.Helper()
	c, served := dial(t, n, path, dialOpts{})
	c.CloseNow()
	if served != n.id {
		t.Errorf("%s, %s was served by %q, want %s", when, path, served, n.id)
	}
}

// recv waits for the next value on ch.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitFor):
		t.Fatalf("no %s within %v", what, waitFor)
		panic("unreachable")
	}
}

// deadAddr returns the address of a listener that has been closed.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// silentAddr returns the address of a listener that accepts connections
// and never answers; everything is closed when the test ends.
func silentAddr(t *testing.T) string {
	t.Helper()
	return acceptAll(t, nil)
}

// acceptAll returns the address of a listener that hands each connection
// to handle on a goroutine of its own, or keeps it unanswered when handle
// is nil. When the test ends, the listener and every connection are
// closed, and the goroutines waited for.
func acceptAll(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		conns  []net.Conn
		closed bool
	)
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if closed { // accepted as the test ended
				mu.Unlock()
				c.Close()
				return
			}
			conns = append(conns, c)
			mu.Unlock()
			if handle != nil {
				wg.Go(func() { handle(c) })
			}
		}
	})
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		closed = true
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

// acceptUpgrade reads a WebSocket upgrade request from br and accepts it
// on c, as a node's server would, for tests that then speak frames on c.
func acceptUpgrade(c net.Conn, br *bufio.Reader) error {
	req, err := http.ReadRequest(br)
	if err != nil {
		return err
	}
	_, err = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Accept: "+acceptKey(req.Header.Get("Sec-WebSocket-Key"))+"\r\n\r\n")
	return err
}
