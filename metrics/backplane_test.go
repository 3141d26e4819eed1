package metrics_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
	"github.com/muster-gg/muster/metrics"
)

// TestInstrument calls every operation through an instrumented backplane
// and checks what is counted as an error.
func TestInstrument(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := prometheus.NewPedanticRegistry()
	faulty := fleettest.NewFaulty(memory.New())
	bp := metrics.Instrument(faulty, reg)
	// A second backplane on the same registry adds to the same series.
	other := metrics.Instrument(memory.New(), reg)
	srv := httptest.NewServer(metrics.Handler(reg))
	defer srv.Close()

	key := backplane.Key{Kind: "player", ID: "alice"}
	if _, _, err := bp.Heartbeat(ctx, backplane.Node{ID: "s0", Data: []byte("{}")}, time.Minute); err != nil {
		t.Fatal(err)
	}
	var token string // of the take, for the confirm
	steps := []struct {
		op   string
		call func() error
	}{
		{"nodes", func() error { _, err := bp.Nodes(ctx); return err }},
		{"claim", func() error { return bp.Claim(ctx, "s0", key) }},
		{"claim_unique", func() error {
			_, err := bp.ClaimUnique(ctx, "s0", backplane.Key{Kind: "lobby", ID: "ABCD"})
			return err
		}},
		{"locate", func() error { _, err := bp.Locate(ctx, key); return err }},
		{"arrive", func() error { _, _, err := bp.Arrive(ctx, key, "s1", "bob", time.Minute); return err }},
		{"release", func() error { return bp.Release(ctx, "s0", key) }},
		{"put_handoff", func() error { return bp.PutHandoff(ctx, "s1", "alice", []byte("x"), time.Minute) }},
		{"take_handoff", func() error {
			taken, err := bp.TakeHandoff(ctx, "s1", "alice", time.Minute)
			token = taken.Token
			return err
		}},
		{"confirm_handoff", func() error { return bp.ConfirmHandoff(ctx, "s1", "alice", token) }},
		{"increment", func() error { _, err := bp.Increment(ctx, "k", time.Minute, 1); return err }},
		{"put_record", func() error { return bp.PutRecord(ctx, "c", "r", []byte("x")) }},
		{"record", func() error { _, err := bp.Record(ctx, "c", "r"); return err }},
		{"records", func() error { _, err := bp.Records(ctx, "c"); return err }},
		{"delete_record", func() error { return bp.DeleteRecord(ctx, "c", "r") }},
		{"swap_records", func() error {
			// Instrument keeps the compare-and-set of the backplane it wraps.
			swapper, ok := bp.(backplane.RecordSwapper)
			if !ok {
				return errors.New("instrumented backplane is not a RecordSwapper")
			}
			_, err := swapper.SwapRecords(ctx, backplane.RecordSwap{Collection: "c", ID: "s", New: []byte("x")})
			return err
		}},
		{"leave", func() error { return bp.Leave(ctx, "s0") }},
	}
	for _, s := range steps {
		if err := s.call(); err != nil {
			t.Fatalf("%s: %v", s.op, err)
		}
	}
	// Answers of the contract are not errors.
	if _, err := bp.Locate(ctx, key); !errors.Is(err, backplane.ErrNotFound) {
		t.Fatalf("locate released key: %v, want ErrNotFound", err)
	}
	if _, err := bp.TakeHandoff(ctx, "s1", "alice", time.Minute); !errors.Is(err, backplane.ErrNotFound) {
		t.Fatalf("take handoff twice: %v, want ErrNotFound", err)
	}
	// Injected failures are.
	faulty.Fail("Heartbeat", fleettest.ErrInjected)
	faulty.Fail("Claim", fleettest.ErrInjected)
	for range 2 {
		if _, _, err := bp.Heartbeat(ctx, backplane.Node{ID: "s0", Data: []byte("{}")}, time.Minute); err == nil {
			t.Fatal("heartbeat did not fail")
		}
	}
	if err := bp.Claim(ctx, "s0", key); err == nil {
		t.Fatal("claim did not fail")
	}
	if _, err := other.Nodes(ctx); err != nil {
		t.Fatal(err)
	}

	const dur = "muster_backplane_request_duration_seconds_count"
	const errs = "muster_backplane_errors_total"
	m := scrape(t, srv.URL)
	exp := map[string]float64{
		dur + `{operation="heartbeat"}`:     3,
		errs + `{operation="heartbeat"}`:    2,
		dur + `{operation="claim"}`:         2,
		errs + `{operation="claim"}`:        1,
		dur + `{operation="locate"}`:        2,
		errs + `{operation="locate"}`:       0,
		dur + `{operation="take_handoff"}`:  2,
		errs + `{operation="take_handoff"}`: 0,
		dur + `{operation="nodes"}`:         2, // one each from both backplanes
	}
	for _, s := range steps {
		if _, ok := exp[dur+`{operation="`+s.op+`"}`]; !ok {
			exp[dur+`{operation="`+s.op+`"}`] = 1
			exp[errs+`{operation="`+s.op+`"}`] = 0
		}
	}
	if problem := want(exp)(m); problem != "" {
		t.Error(problem)
	}
	if err := bp.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := bp.Nodes(ctx); !errors.Is(err, backplane.ErrClosed) {
		t.Fatalf("nodes after close: %v, want ErrClosed", err)
	}
}

// TestInstrumentNilRegisterer keeps counting without a registry.
func TestInstrumentNilRegisterer(t *testing.T) {
	t.Parallel()
	bp := metrics.Instrument(memory.New(), nil)
	if _, err := bp.Nodes(context.Background()); err != nil {
		t.Fatal(err)
	}
}
