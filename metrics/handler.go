package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the metrics gathered from g (usually the
// *prometheus.Registry the Collector and Instrument were registered on) in
// the Prometheus exposition formats, for GET /metrics. A collector that
// fails is reported in the response and logged nowhere; the others are
// still served.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
