package muster_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/room"
)

// The servers of these tests: each on a loopback port of its own, run
// until the test ends, waited on by condition.

// loopback listens on a port of 127.0.0.1 of its own, closed when the test
// ends if a server's Run has not closed it before.
func loopback(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// newServer builds a server on a loopback port of its own, which is run
// (and stopped at once) when the test ends, to close what New opened.
func newServer(t *testing.T, opts ...muster.Option) *muster.Server {
	t.Helper()
	s, err := muster.New(Counter{}, muster.DefaultConfig(), append([]muster.Option{muster.WithListener(loopback(t)), quiet}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := runStopped(s); err != nil {
			t.Error(err)
		}
	})
	return s
}

// runStopped runs s with a context that has already ended, which closes
// what New opened, and returns Run's error.
func runStopped(s *muster.Server) error {
	ctx, stop := context.WithCancel(context.Background())
	stop()
	return s.Run(ctx)
}

// stopWithin bounds how long a server's Run may take to return once its
// context has ended; a failure deadline, never a measurement.
const stopWithin = 20 * time.Second

// serverRun is a server's Run on a goroutine of its own.
type serverRun struct {
	cancel context.CancelFunc // ends Run's context
	done   chan struct{}      // closed when Run has returned
	err    error              // Run's, once done is closed
}

// runServer runs s until the test ends; the test's cleanup stops it and
// reports Run's error.
func runServer(t *testing.T, s *muster.Server) *serverRun {
	ctx, cancel := context.WithCancel(context.Background())
	r := &serverRun{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = s.Run(ctx)
	}()
	t.Cleanup(func() {
		if err := r.stop(t); err != nil {
			t.Errorf("%s: Run: %v", s.NodeID(), err)
		}
	})
	return r
}

// wait waits for Run to return and returns its error; the test fails if
// Run has not returned within d.
func (r *serverRun) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-r.done:
		return r.err
	case <-time.After(d):
		t.Fatalf("Run has not returned within %v", d)
		return nil
	}
}

// stop ends Run's context and returns Run's error; the test fails if Run
// has not returned within stopWithin. Safe to call twice.
func (r *serverRun) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	return r.wait(t, stopWithin)
}

// testServer is a server a test runs on a loopback port of its own.
type testServer struct {
	*muster.Server
	addr string // its game port's host:port
	run  *serverRun
}

// start runs the server of game with cfg and opts on l until the test
// ends, and returns it once it is ready; the test fails if Run returns
// first.
func start[S, I, P any](t *testing.T, game room.Game[S, I, P], cfg config.Config, l net.Listener, opts ...muster.Option) *testServer {
	t.Helper()
	s, err := muster.New(game, cfg, append([]muster.Option{muster.WithListener(l)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: s, addr: l.Addr().String(), run: runServer(t, s)}
	// Run marks the server ready once it serves; until then /play says 503.
	waitUntil(t, s.NodeID()+" ready", func() bool {
		select {
		case <-ts.run.done:
			t.Fatalf("Run returned before the server was ready: %v", ts.run.err)
		default:
		}
		return s.Fleet().State() == fleet.StateReady
	})
	return ts
}

// startServer runs a server of Counter with cfg and opts on a loopback
// port of its own until the test ends, and returns it once it is ready.
func startServer(t *testing.T, cfg config.Config, opts ...muster.Option) *testServer {
	t.Helper()
	return start(t, Counter{}, cfg, loopback(t), append([]muster.Option{quiet}, opts...)...)
}

// seesReady waits until s sees other ready: a server's first record says
// it is starting, and the others read the next one a heartbeat later.
func seesReady(t *testing.T, s, other *testServer) {
	t.Helper()
	waitUntil(t, s.NodeID()+" sees "+other.NodeID()+" ready", func() bool {
		n, ok := s.Fleet().Node(other.NodeID())
		return ok && n.State == fleet.StateReady
	})
}

// waitUntil polls cond every 2 ms until it holds; the test fails after
// 15 s. A wait that fails says what it waited for, never how long it
// took.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, 15*time.Second, what, cond)
}

// waitWithin is waitUntil with another bound, for what takes longer.
func waitWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
	}
}

// metricsOf returns the /metrics page of the server at addr.
func metricsOf(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
