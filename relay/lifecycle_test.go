package relay

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/testrun"
)

func TestCloseEndsRelayedConnections(t *testing.T) {
	t.Parallel()
	a, b := startPair(t)
	const n = 8
	clients := make([]*websocket.Conn, n)
	for i := range clients {
		clients[i] = dialRelayed(t, a, b, dialOpts{})
	}
	if got := a.relay.Stats().Active; got != n {
		t.Fatalf("Active = %d, want %d", got, n)
	}
	// Clients keep reading, as real ones do, so they answer the close
	// handshake.
	ends := make(chan error, n)
	for _, c := range clients {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			_, err := readUntilError(ctx, c)
			ends <- err
		}()
	}
	if err := a.relay.Close(); err != nil {
		t.Fatal(err)
	}
	// Close has waited: nothing is left.
	if st := a.relay.Stats(); st.Active != 0 {
		t.Errorf("after Close, Active = %d", st.Active)
	}
	for range clients {
		err := recv(t, ends, "end of a client")
		if ce := closeErrorOf(err); ce.Code != websocket.StatusGoingAway || ce.Reason != "server closing" {
			t.Errorf("client saw %v, want 1001 server closing", err)
		}
		if ce := recv(t, b.ends, "end at b"); ce.Code != websocket.StatusGoingAway {
			t.Errorf("b saw %d %q, want 1001", ce.Code, ce.Reason)
		}
	}
	if err := a.relay.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	servesItself(t, a, "/ws?node=b", "after Close") // a closed relay serves everything locally
}

func TestShutdownWaitsForConnections(t *testing.T) {
	t.Parallel()
	a, _, c := relayedVia(t)

	done := make(chan error, 1)
	go func() { done <- a.relay.Shutdown(context.Background()) }()
	// New connections are served locally once shutdown has begun.
	testrun.WaitFor(t, "new upgrades served locally", func() bool {
		c2, served := dial(t, a, "/ws?node=b", dialOpts{})
		c2.CloseNow()
		return served == "a"
	})
	stillEchoes(t, c, "during shutdown") // the open one still works
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a connection open", err)
	default:
	}
	c.Close(websocket.StatusNormalClosure, "")
	if err := recv(t, done, "Shutdown to return"); err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	if err := a.relay.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown = %v", err)
	}
}

// stillEchoes checks that the relayed connection c still reaches the echo
// node: what it sends comes back.
func stillEchoes(t *testing.T, c *websocket.Conn, when string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte("still here")); err != nil {
		t.Fatalf("write %s: %v", when, err)
	}
	if _, data, err := c.Read(ctx); err != nil || string(data) != "still here" {
		t.Fatalf("echo %s: %q, %v", when, data, err)
	}
}

func TestShutdownDeadlineCloses(t *testing.T) {
	t.Parallel()
	a, b, c := relayedVia(t)
	recv(t, b.seen, "request at b")

	end := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		_, err := readUntilError(ctx, c)
		end <- err
	}()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.relay.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown with a done context = %v, want context.Canceled", err)
	}
	if err := recv(t, end, "end of the client"); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Errorf("client saw %v, want 1001", err)
	}
	if ce := recv(t, b.ends, "end at b"); ce.Code != websocket.StatusGoingAway {
		t.Errorf("b saw %d %q, want 1001", ce.Code, ce.Reason)
	}
}

// TestCloseRacesTraffic closes the relay while clients are mid-exchange;
// the race detector and goleak judge it.
func TestCloseRacesTraffic(t *testing.T) {
	t.Parallel()
	a, _ := startPair(t)
	var wg sync.WaitGroup
	for range 6 {
		c, _ := dial(t, a, "/ws?node=b", dialOpts{})
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			msg := make([]byte, 100<<10)
			for {
				if err := c.Write(ctx, websocket.MessageBinary, msg); err != nil {
					return
				}
				if _, _, err := c.Read(ctx); err != nil {
					return
				}
			}
		})
	}
	testrun.WaitFor(t, "traffic flowing", func() bool { return a.relay.Stats().BytesToClient > 1<<20 })
	if err := a.relay.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}

// TestCloseWhileAccepting: Close between the dial to the node and the
// client's acceptance ends both sides; the client gets a handshake and then
// 1001.
func TestCloseWhileAccepting(t *testing.T) {
	t.Parallel()
	dir := &dirMap{}
	b := startNode(t, "b", dir)
	a := newNode(t, "a", dir)
	closed := make(chan error, 1)
	a.relay.testHookAccepting = func(s *session) {
		go func() { closed <- a.relay.Close() }()
		testrun.WaitFor(t, "session stopped", func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.stopped
		})
	}
	a.srv = httptest.NewServer(a.relay.Middleware(a.mux()))
	a.finish(t, dir)

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+a.addr+"/ws?node=b", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if _, err := readUntilError(ctx, c); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Errorf("client saw %v, want 1001", err)
	}
	if ce := recv(t, b.ends, "end at b"); ce.Code != websocket.StatusGoingAway {
		t.Errorf("b saw %d %q, want 1001", ce.Code, ce.Reason)
	}
	if err := recv(t, closed, "Close to return"); err != nil {
		t.Error(err)
	}
}

// TestDrainRefusesNewRelays: a draining server answers a new connection
// for another node 503 before the upgrade, so that a load balancer tries
// another server instead of one that will cut it when it leaves; the
// connection it relays already carries on, and one for itself is served.
func TestDrainRefusesNewRelays(t *testing.T) {
	t.Parallel()
	a, _, c := relayedVia(t)
	if err := a.relay.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c2, resp, err := websocket.Dial(ctx, "ws://"+a.addr+"/ws?node=b", nil)
	if err == nil {
		c2.CloseNow()
		t.Fatal("a draining server relayed a new connection")
	}
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a draining server answered %v (%v), want 503 with Retry-After", resp, err)
	}
	if st := a.relay.Stats(); st.Relayed != 1 || st.Active != 1 {
		t.Errorf("stats %+v, want the one connection relayed before the drain", st)
	}
	stillEchoes(t, c, "during the drain")
	servesItself(t, a, "/ws", "during the drain")
}

// TestCloseLosesNothingTheNodeSent: Close tells the node first and the
// client once the node has answered, so every message the node sent
// before it read the relay's close reaches the client, in order, and then
// the close (it used to close both at once, and what was on its way from
// the node was lost).
func TestCloseLosesNothingTheNodeSent(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string][]nodeOpt{"loop": nil, "goroutines": {withoutLoop()}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, b, c := relayedVia(t, opts...)
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			if err := c.Write(ctx, websocket.MessageText, []byte("stream")); err != nil {
				t.Fatal(err)
			}
			got := 0
			read := func() error {
				_, data, err := c.Read(ctx)
				if err != nil {
					return err
				}
				if want := "s" + strconv.Itoa(got); string(data) != want {
					t.Fatalf("message %d is %q, want %q", got, data, want)
				}
				got++
				return nil
			}
			for got < 100 { // the node is streaming
				if err := read(); err != nil {
					t.Fatalf("after %d messages: %v", got, err)
				}
			}
			closed := make(chan error, 1)
			go func() { closed <- a.relay.Close() }()
			var err error
			for err == nil {
				err = read()
			}
			if ce := closeErrorOf(err); ce.Code != websocket.StatusGoingAway || ce.Reason != "server closing" {
				t.Errorf("the client's connection ended with %v, want 1001 server closing", err)
			}
			if sent := recv(t, b.streamed, "the node's count"); got != sent {
				t.Errorf("the client got %d of the %d messages the node sent", got, sent)
			}
			if err := recv(t, closed, "Close to return"); err != nil {
				t.Error(err)
			}
		})
	}
}
