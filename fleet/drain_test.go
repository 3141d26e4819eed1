package fleet_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
)

// probe makes a request to the fleet's handler from remote, as if it came
// over the network.
func probe(h http.Handler, method, path, remote, auth string) int {
	r := httptest.NewRequest(method, path, nil)
	r.RemoteAddr = remote
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

func TestProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fleettest.Start(t, 0, nil)
		s := c.Add(fleet.Config{NodeID: "a", MaxLoad: 10, DrainToken: "s3cret"})
		h := s.Handler()
		const lo = "127.0.0.1:5000"
		ready := func() int { return probe(h, "GET", fleet.PathReady, lo, "") }

		// fleettest marks servers ready; a fresh one is starting.
		fresh := newFleet(t, fleet.Config{NodeID: "fresh"}, c.Servers[0].Backplane, nil)
		if got := probe(fresh.Handler(), "GET", fleet.PathReady, lo, ""); got != 503 {
			t.Errorf("ready while starting = %d, want 503", got)
		}
		if got := probe(fresh.Handler(), "GET", fleet.PathLive, lo, ""); got != 200 {
			t.Errorf("live while starting = %d, want 200", got)
		}

		if got := ready(); got != 200 {
			t.Errorf("ready = %d, want 200", got)
		}
		s.SetLoad(10)
		if got := ready(); got != 503 || s.State() != fleet.StateFull {
			t.Errorf("ready at max-load = %d (%s), want 503 full", got, s.State())
		}
		s.SetLoad(9)
		if got := ready(); got != 200 {
			t.Errorf("ready below max-load = %d, want 200", got)
		}
		if got := probe(h, "GET", fleet.PathCapacity, lo, ""); got != 200 {
			t.Errorf("capacity = %d", got)
		}

		// Drain: refused from afar without the token.
		for _, tc := range []struct {
			remote, auth string
		}{
			{"203.0.113.9:4000", ""},
			{"203.0.113.9:4000", "Bearer wrong"},
			{"garbage", ""},
		} {
			if got := probe(h, "POST", fleet.PathDrain, tc.remote, tc.auth); got != http.StatusForbidden {
				t.Errorf("drain from %s with %q = %d, want 403", tc.remote, tc.auth, got)
			}
		}
		if s.Draining() {
			t.Fatal("a refused drain request started a drain")
		}
		if got := probe(h, "POST", fleet.PathDrain, "203.0.113.9:4000", "Bearer s3cret"); got != http.StatusAccepted {
			t.Fatalf("drain with the token = %d, want 202", got)
		}
		synctest.Wait()
		if got := ready(); got != 503 {
			t.Errorf("ready while draining = %d, want 503", got)
		}
		<-s.Done()
	})
}

func TestDrainWaitsForDrainers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fleettest.Start(t, 0, nil)
		s := c.Add(fleet.Config{NodeID: "a", DrainTimeout: 30 * time.Second})
		start := time.Now()
		s.AddDrainer(fleet.DrainerFunc(func(ctx context.Context) error {
			time.Sleep(5 * time.Second) // queues handed over, last room ends
			return nil
		}))
		if err := s.Drain(t.Context()); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 5*time.Second {
			t.Errorf("drain took %v, want the drainer's 5s", took)
		}
		select {
		case <-s.Done():
		default:
			t.Error("drained server has not left")
		}
	})
}

func TestDrainTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fleettest.Start(t, 0, nil)
		s := c.Add(fleet.Config{NodeID: "a", DrainTimeout: 30 * time.Second})
		told := false
		s.AddDrainer(fleet.DrainerFunc(func(ctx context.Context) error {
			<-ctx.Done() // a room that never ends on its own
			told = true
			time.Sleep(time.Second) // grace, then closed
			return nil
		}))
		start := time.Now()
		done := make(chan error)
		go func() { done <- s.Drain(context.Background()) }()
		// A second call waits for the same drain.
		if err := s.Drain(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 31*time.Second || !told {
			t.Errorf("drain took %v (told %v), want the 30s timeout and the 1s grace", took, told)
		}
	})
}

// A draining server takes the handoffs written for it, to pass them on
// with the players it sends away.
func TestDrainingServerTakesHandoffs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fleettest.Start(t, 2, nil)
		a, b := c.Servers[0], c.Servers[1]
		release := make(chan struct{})
		b.AddDrainer(fleet.DrainerFunc(func(context.Context) error { <-release; return nil }))
		go b.Drain(context.Background())
		synctest.Wait()
		if err := a.PutHandoff(t.Context(), "s1", "p", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if data, err := b.TakeHandoff(t.Context(), "p"); err != nil || string(data) != "x" {
			t.Fatalf("draining server's handoff: %q, %v", data, err)
		}
		close(release)
		<-b.Done()
	})
}
