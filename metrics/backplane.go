package metrics

import (
	"errors"
	"strings"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/muster-gg/muster/backplane"
)

// backplaneBuckets are the upper bounds, in seconds, of the backplane
// latency histogram: from a tenth of a millisecond (memory, a local Redis)
// to a second (well past any call timeout).
var backplaneBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}

// Instrument returns bp with every call counted and timed on reg:
//
//   - muster_backplane_request_duration_seconds{operation}: a histogram of
//     call latency, failed calls included, in buckets from 100µs to 1s.
//   - muster_backplane_errors_total{operation}: failed calls.
//
// The operation is the method in snake case ("heartbeat", "claim_unique",
// "put_handoff", "swap_records" …). Answers that are part of the contract
// are not errors: backplane.ErrNotFound (Locate of an unclaimed unit, a
// handoff already taken) and backplane.ErrUnsupported (a store without
// counters). A caller's own cancellation is counted like a timeout, since
// the fleet's calls end only at their deadlines.
//
// Instrument the backplane before handing it to fleet.New, so the fleet's
// calls are the ones measured. Instrumenting several backplanes on one reg
// adds up their calls in the same series. A nil reg keeps the counts
// without registering them. Like MustRegister, Instrument panics when reg
// holds other collectors under these names. The result implements the
// optional interfaces of backplane (backplane.RecordSwapper) that bp
// implements (see backplane.Wrap). Closing it closes bp; it is safe for
// concurrent use when bp is.
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
	ops := backplane.Ops()
	m := &backplaneMetrics{errors: make([]prometheus.Counter, len(ops)), duration: make([]prometheus.Observer, len(ops))}
	for _, op := range ops {
		m.errors[op] = errs.WithLabelValues(snakeCase(op.String()))
		m.duration[op] = dur.WithLabelValues(snakeCase(op.String()))
	}
	return backplane.Wrap(bp, backplane.Hooks{After: m.observe})
}

// backplaneMetrics are the series of one instrumented backplane, indexed
// by backplane.Op.
type backplaneMetrics struct {
	errors   []prometheus.Counter
	duration []prometheus.Observer
}

// observe records one call of op that began at began and ended with err.
func (m *backplaneMetrics) observe(op backplane.Op, began time.Time, err error) {
	m.duration[op].Observe(time.Since(began).Seconds())
	if err != nil && !errors.Is(err, backplane.ErrNotFound) && !errors.Is(err, backplane.ErrUnsupported) {
		m.errors[op].Inc()
	}
}

// snakeCase turns a method name into its operation label: "ClaimUnique"
// into "claim_unique".
func snakeCase(name string) string {
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
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
