package metrics_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
	"github.com/muster-gg/muster/metrics"
)

// gauge returns the value of the unlabelled series name that reg gathers,
// and whether it has one.
func gauge(t *testing.T, reg *prometheus.Registry, name string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// Two servers with different security keys on one backplane: each one's
// muster_fleet_foreign_nodes counts the other (#39.7).
func TestForeignNodesMetric(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fleettest.Start(t, 0, nil)
		var regs []*prometheus.Registry
		for i, key := range []string{"the first key, 16+", "the second key, 16+"} {
			f := c.Add(fleet.Config{NodeID: string(rune('a' + i)), InternalAddress: "127.0.0.1:9000", Key: []byte(key)}).Fleet
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(metrics.NewCollector(metrics.Sources{Fleet: f}))
			regs = append(regs, reg)
		}
		for i := 0; i < 5; i++ {
			time.Sleep(fleettest.Heartbeat)
			synctest.Wait()
		}
		for i, reg := range regs {
			if v, ok := gauge(t, reg, "muster_fleet_foreign_nodes"); !ok || v != 1 {
				t.Errorf("server %d: muster_fleet_foreign_nodes = %v (present %v), want 1", i, v, ok)
			}
			if v, _ := gauge(t, reg, "muster_fleet_nodes"); v != 1 {
				t.Errorf("server %d: muster_fleet_nodes = %v, want 1 (itself)", i, v)
			}
		}
	})
}
