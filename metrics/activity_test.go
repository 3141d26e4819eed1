package metrics_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/metrics"
	"github.com/muster-gg/muster/relay"
	"github.com/muster-gg/muster/room"
)

const testSecret = "metrics-test-secret-0123456789"

// TestScrapeMovesWithActivity wires a real server — fleet on an
// instrumented backplane, room host, relay — serves /metrics, and watches
// the series move as rooms open, a connection is relayed and the backplane
// fails.
func TestScrapeMovesWithActivity(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})

	reg := prometheus.NewPedanticRegistry()
	faulty := fleettest.NewFaulty(memory.New())
	fl, err := fleet.New(fleet.Config{NodeID: "a", Region: "eu-west", Heartbeat: 50 * time.Millisecond, DrainTimeout: 200 * time.Millisecond}, metrics.Instrument(faulty, reg), logger)
	if err != nil {
		t.Fatal(err)
	}
	// The test game's rooms do nothing: the host still steps them, which
	// is what the lateness series measure.
	host, err := room.New[*hosttest.Sim, int, string](&hosttest.Game{}, room.Config{Rate: 100, Workers: 2, DrainGrace: 50 * time.Millisecond}, logger)
	if err != nil {
		t.Fatal(err)
	}
	host.UseServer(fl)
	host.UseFleet(fl)

	// Server b: the target of the relayed connection, an echo.
	b := httptest.NewServer(http.HandlerFunc(echo))
	t.Cleanup(b.Close)
	bAddr := b.Listener.Addr().String()
	rl, err := relay.New(relay.Config{NodeID: "a", Secret: testSecret}, relay.DirectoryFunc(func(id string) (string, bool) {
		return bAddr, id == "b"
	}), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rl.Close() })

	reg.MustRegister(metrics.NewCollector(metrics.Sources{Fleet: fl, Rooms: host, Relay: rl}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.Handler(reg))
	a := httptest.NewServer(rl.Middleware(mux))
	t.Cleanup(a.Close)
	url := a.URL + "/metrics"

	wg.Go(func() { fl.Run(ctx) })
	wg.Go(func() { host.Run(ctx) })
	fl.MarkReady()

	eventually(t, url, "at start", want(map[string]float64{
		`muster_server_state{state="ready"}`:                   1,
		`muster_backplane_attached`:                            1,
		`muster_rooms`:                                         0,
		`muster_players_seated`:                                0,
		`muster_relay_connections_total`:                       0,
		`muster_backplane_errors_total{operation="heartbeat"}`: 0,
	}))

	// Rooms open and step; the load reaches the fleet; a queue grows.
	for _, players := range [][]string{{"alice", "bob"}, {"carol", "dave"}} {
		if _, err := host.OpenRoom(ctx, room.Info{Kind: "duel", Players: players}); err != nil {
			t.Fatal(err)
		}
	}
	fl.SetStat("queue:duel", 3)
	eventually(t, url, "rooms opened", want(map[string]float64{
		`muster_rooms`:                         2,
		`muster_players_seated`:                4,
		`muster_server_load`:                   4,
		`muster_queue_length{playlist="duel"}`: 3,
	}))
	eventually(t, url, "rooms stepped", atLeast(map[string]float64{
		`muster_step_passes_total`:                      10,
		`muster_step_lateness_seconds{quantile="0.99"}`: 0, // no longer NaN
		// Seating claims a room's players first, in one round trip per room.
		`muster_backplane_request_duration_seconds_count{operation="reassert"}`: 2,
	}))

	// A connection for node b is relayed, both ways.
	conn, _, err := websocket.Dial(ctx, a.URL+"/play?node=b", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if err := conn.Write(ctx, websocket.MessageText, []byte("hello, b")); err != nil {
		t.Fatal(err)
	}
	if _, msg, err := conn.Read(ctx); err != nil || string(msg) != "hello, b" {
		t.Fatalf("echo: %q, %v", msg, err)
	}
	eventually(t, url, "relaying", want(map[string]float64{
		`muster_relay_connections_active`:                 1,
		`muster_relay_connections_total`:                  1,
		`muster_relay_bytes_total{direction="to_node"}`:   8,
		`muster_relay_bytes_total{direction="to_client"}`: 8,
	}))
	conn.Close(websocket.StatusNormalClosure, "bye")
	eventually(t, url, "relay closed", want(map[string]float64{
		`muster_relay_connections_active`: 0,
		`muster_relay_connections_total`:  1,
	}))

	// The backplane fails: errors are counted and the server serves alone.
	faulty.Fail("Heartbeat", fleettest.ErrInjected)
	eventually(t, url, "backplane failing", atLeast(map[string]float64{
		`muster_backplane_errors_total{operation="heartbeat"}`: 1,
	}))
	eventually(t, url, "backplane failing", want(map[string]float64{`muster_backplane_attached`: 0}))
	faulty.Fail("Heartbeat", nil)
	eventually(t, url, "backplane back", want(map[string]float64{`muster_backplane_attached`: 1}))

	// Locating an unclaimed unit is an answer, not an error.
	if _, err := fl.Locate(ctx, fleet.KindPlayer, "nobody"); !errors.Is(err, fleet.ErrNotFound) {
		t.Fatalf("locate: %v", err)
	}
	eventually(t, url, "locate", want(map[string]float64{
		`muster_backplane_request_duration_seconds_count{operation="locate"}`: 1,
		`muster_backplane_errors_total{operation="locate"}`:                   0,
	}))

	// Draining shows in the state; the idle rooms never end, so the drain
	// timeout closes them.
	fl.Drain(ctx)
	eventually(t, url, "drained", want(map[string]float64{
		`muster_server_state{state="ready"}`:   0,
		`muster_server_state{state="leaving"}`: 1,
		`muster_rooms`:                         0,
	}))
}

// echo accepts a WebSocket and sends every message back.
func echo(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	for {
		typ, msg, err := c.Read(r.Context())
		if err != nil {
			return
		}
		if err := c.Write(r.Context(), typ, msg); err != nil {
			return
		}
	}
}
