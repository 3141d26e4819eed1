package metrics_test

import (
	"bufio"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/metrics"
)

// A server instruments its backplane before the fleet uses it, registers a
// Collector for the parts it has (here only the fleet; pass the room host
// and the relay too), and serves /metrics.
func Example() {
	reg := prometheus.NewRegistry()
	bp := metrics.Instrument(memory.New(), reg)
	defer bp.Close()
	fl, err := fleet.New(fleet.Config{NodeID: "game-1", Region: "eu-west", MaxLoad: 100}, bp, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fl.MarkReady()
	fl.SetLoad(12)
	fl.SetStat("queue:duel", 3)
	reg.MustRegister(metrics.NewCollector(metrics.Sources{Fleet: fl}))

	// router.Handle("/metrics", metrics.Handler(reg)), scraped:
	rec := httptest.NewRecorder()
	metrics.Handler(reg).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "muster_server_") || strings.HasPrefix(line, "muster_queue_") {
			fmt.Println(line)
		}
	}
	// Output:
	// muster_queue_length{playlist="duel"} 3
	// muster_server_info{cluster="default",node_id="game-1",region="eu-west"} 1
	// muster_server_load 12
	// muster_server_max_load 100
	// muster_server_state{state="draining"} 0
	// muster_server_state{state="full"} 0
	// muster_server_state{state="leaving"} 0
	// muster_server_state{state="ready"} 1
	// muster_server_state{state="starting"} 0
}
