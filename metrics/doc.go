// Package metrics exposes a game server's state to Prometheus: the rooms
// and players of its room host, its load, state and queues as its fleet
// publishes them, the connections and bytes of its relay, and the errors and
// latency of its backplane calls.
//
// A server builds one Collector from the parts it has (any of them may be
// left out), registers it on a prometheus.Registry, and serves Handler on
// /metrics:
//
//	bp = metrics.Instrument(bp, reg) // before fleet.New, so every call is seen
//	reg.MustRegister(metrics.NewCollector(metrics.Sources{Fleet: fl, Rooms: host, Relay: rl}))
//	router.Handle("/metrics", metrics.Handler(reg))
//
// Every series is named muster_…, with its unit in the name where it has
// one; see NewCollector and Instrument for the list.
//
// # Lifecycle and concurrency
//
// Nothing in this package starts a goroutine. A Collector reads its sources
// when Prometheus scrapes, so a scrape costs a few snapshot calls (no
// backplane round trip) and values are as fresh as the sources. Collectors,
// instrumented backplanes and handlers are safe for concurrent use.
package metrics
