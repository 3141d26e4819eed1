package muster_test

import (
	"fmt"
	"time"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/config"
)

// A fleet whose drain waits 60 s for matches to end: its orchestrator's
// grace period (docker compose's stop_grace_period) must exceed this,
// with a margin for a loaded machine.
func ExampleStopBound() {
	cfg := muster.DefaultConfig()
	cfg.Server.Drain.Timeout = config.Duration(60 * time.Second)
	fmt.Println(muster.StopBound(cfg))
	// Output: 1m10s
}
