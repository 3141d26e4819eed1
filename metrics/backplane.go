package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/muster-gg/muster/backplane"
)

// Operation label values of the backplane series, one per method of
// backplane.Backplane except Close.
var operations = []string{
	"heartbeat", "nodes", "leave", "claim", "claim_unique", "reassert", "release", "locate", "arrive",
	"put_handoff", "take_handoff", "confirm_handoff", "increment", "put_record", "record", "delete_record", "records",
}

// backplaneBuckets are the upper bounds, in seconds, of the backplane
// latency histogram: from a tenth of a millisecond (memory, a local Redis)
// to a second (well past any call timeout).
var backplaneBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}

var _ backplane.Backplane = (*instrumented)(nil)

// instrumented is a backplane.Backplane that counts and times the calls of
// the one it wraps.
type instrumented struct {
	next     backplane.Backplane
	errors   map[string]prometheus.Counter
	duration map[string]prometheus.Observer
}

// Instrument returns bp with every call counted and timed on reg:
//
//   - muster_backplane_request_duration_seconds{operation}: a histogram of
//     call latency, failed calls included, in buckets from 100µs to 1s.
//   - muster_backplane_errors_total{operation}: failed calls.
//
// The operation is the method in snake case ("heartbeat", "claim_unique",
// "put_handoff" …). Answers that are part of the contract are not errors:
// backplane.ErrNotFound (Locate of an unclaimed unit, a handoff already
// taken) and backplane.ErrUnsupported (a store without counters). A caller's
// own cancellation is counted like a timeout, since the fleet's calls end
// only at their deadlines.
//
// Instrument the backplane before handing it to fleet.New, so the fleet's
// calls are the ones measured. Instrumenting several backplanes on one reg
// adds up their calls in the same series. A nil reg keeps the counts
// without registering them. Like MustRegister, Instrument panics when reg
// holds other collectors under these names. Closing the returned backplane
// closes bp; the result is safe for concurrent use when bp is.
func Instrument(bp backplane.Backplane, reg prometheus.Registerer) backplane.Backplane {
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "muster_backplane_errors_total",
		Help: "Backplane calls that failed, by operation.",
	}, []string{"operation"})
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "muster_backplane_request_duration_seconds",
		Help:    "Latency of backplane calls, by operation.",
		Buckets: backplaneBuckets,
	}, []string{"operation"})
	if reg != nil {
		errs = registerOrReuse(reg, errs)
		dur = registerOrReuse(reg, dur)
	}
	b := &instrumented{
		next:     bp,
		errors:   make(map[string]prometheus.Counter, len(operations)),
		duration: make(map[string]prometheus.Observer, len(operations)),
	}
	for _, op := range operations {
		b.errors[op] = errs.WithLabelValues(op)
		b.duration[op] = dur.WithLabelValues(op)
	}
	return b
}

// registerOrReuse registers c on reg, or returns the collector of the same
// description registered before.
func registerOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if prev, ok := are.ExistingCollector.(C); ok {
			return prev
		}
	}
	if err != nil {
		panic(err) // only a name clash with a foreign collector: a wiring error
	}
	return c
}

// observe records one call of op that started at start and ended with err.
func (b *instrumented) observe(op string, start time.Time, err error) {
	b.duration[op].Observe(time.Since(start).Seconds())
	if err != nil && !errors.Is(err, backplane.ErrNotFound) && !errors.Is(err, backplane.ErrUnsupported) {
		b.errors[op].Inc()
	}
}

// Heartbeat implements backplane.Backplane.
func (b *instrumented) Heartbeat(ctx context.Context, node backplane.Node, ttl time.Duration) ([]backplane.Node, bool, error) {
	start := time.Now()
	nodes, created, err := b.next.Heartbeat(ctx, node, ttl)
	b.observe("heartbeat", start, err)
	return nodes, created, err
}

// Nodes implements backplane.Backplane.
func (b *instrumented) Nodes(ctx context.Context) ([]backplane.Node, error) {
	start := time.Now()
	nodes, err := b.next.Nodes(ctx)
	b.observe("nodes", start, err)
	return nodes, err
}

// Leave implements backplane.Backplane.
func (b *instrumented) Leave(ctx context.Context, id string) error {
	start := time.Now()
	err := b.next.Leave(ctx, id)
	b.observe("leave", start, err)
	return err
}

// Claim implements backplane.Backplane.
func (b *instrumented) Claim(ctx context.Context, owner string, keys ...backplane.Key) error {
	start := time.Now()
	err := b.next.Claim(ctx, owner, keys...)
	b.observe("claim", start, err)
	return err
}

// ClaimUnique implements backplane.Backplane.
func (b *instrumented) ClaimUnique(ctx context.Context, owner string, key backplane.Key) (string, error) {
	start := time.Now()
	holder, err := b.next.ClaimUnique(ctx, owner, key)
	b.observe("claim_unique", start, err)
	return holder, err
}

// Reassert implements backplane.Backplane.
func (b *instrumented) Reassert(ctx context.Context, owner string, lease time.Duration, keys ...backplane.Key) ([]backplane.Key, error) {
	start := time.Now()
	lost, err := b.next.Reassert(ctx, owner, lease, keys...)
	b.observe("reassert", start, err)
	return lost, err
}

// Release implements backplane.Backplane.
func (b *instrumented) Release(ctx context.Context, owner string, keys ...backplane.Key) error {
	start := time.Now()
	err := b.next.Release(ctx, owner, keys...)
	b.observe("release", start, err)
	return err
}

// Locate implements backplane.Backplane.
func (b *instrumented) Locate(ctx context.Context, key backplane.Key) (string, error) {
	start := time.Now()
	owner, err := b.next.Locate(ctx, key)
	b.observe("locate", start, err)
	return owner, err
}

// Arrive implements backplane.Backplane.
func (b *instrumented) Arrive(ctx context.Context, key backplane.Key, target, id string, hold time.Duration) (string, backplane.Taken, error) {
	start := time.Now()
	owner, taken, err := b.next.Arrive(ctx, key, target, id, hold)
	b.observe("arrive", start, err)
	return owner, taken, err
}

// PutHandoff implements backplane.Backplane.
func (b *instrumented) PutHandoff(ctx context.Context, target, id string, data []byte, ttl time.Duration) error {
	start := time.Now()
	err := b.next.PutHandoff(ctx, target, id, data, ttl)
	b.observe("put_handoff", start, err)
	return err
}

// TakeHandoff implements backplane.Backplane.
func (b *instrumented) TakeHandoff(ctx context.Context, target, id string, hold time.Duration) (backplane.Taken, error) {
	start := time.Now()
	taken, err := b.next.TakeHandoff(ctx, target, id, hold)
	b.observe("take_handoff", start, err)
	return taken, err
}

// ConfirmHandoff implements backplane.Backplane.
func (b *instrumented) ConfirmHandoff(ctx context.Context, target, id, token string) error {
	start := time.Now()
	err := b.next.ConfirmHandoff(ctx, target, id, token)
	b.observe("confirm_handoff", start, err)
	return err
}

// Increment implements backplane.Backplane.
func (b *instrumented) Increment(ctx context.Context, key string, ttl time.Duration, by int64) (int64, error) {
	start := time.Now()
	n, err := b.next.Increment(ctx, key, ttl, by)
	b.observe("increment", start, err)
	return n, err
}

// PutRecord implements backplane.Backplane.
func (b *instrumented) PutRecord(ctx context.Context, collection, id string, data []byte) error {
	start := time.Now()
	err := b.next.PutRecord(ctx, collection, id, data)
	b.observe("put_record", start, err)
	return err
}

// Record implements backplane.Backplane.
func (b *instrumented) Record(ctx context.Context, collection, id string) ([]byte, error) {
	start := time.Now()
	data, err := b.next.Record(ctx, collection, id)
	b.observe("record", start, err)
	return data, err
}

// DeleteRecord implements backplane.Backplane.
func (b *instrumented) DeleteRecord(ctx context.Context, collection, id string) error {
	start := time.Now()
	err := b.next.DeleteRecord(ctx, collection, id)
	b.observe("delete_record", start, err)
	return err
}

// Records implements backplane.Backplane.
func (b *instrumented) Records(ctx context.Context, collection string) (map[string][]byte, error) {
	start := time.Now()
	recs, err := b.next.Records(ctx, collection)
	b.observe("records", start, err)
	return recs, err
}

// Close implements backplane.Backplane by closing the wrapped backplane.
func (b *instrumented) Close() error { return b.next.Close() }
