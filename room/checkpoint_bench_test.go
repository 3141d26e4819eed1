package room

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/cputime"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// BenchmarkCheckpointCost runs 1,000 rooms (two seats each) at 60 steps a
// second on one server of a fleet on the memory backplane for one second
// per op, without checkpoints and with one a second, in the same run: it
// reports the process's CPU time per second of play, the checkpoint bytes
// written per second and the step lateness p99, and logs the ratio of the
// CPU time with checkpoints to without.
func BenchmarkCheckpointCost(b *testing.B) {
	const rooms = 1000
	cpu := map[string]float64{}
	for _, mode := range []struct {
		name     string
		interval time.Duration
	}{{"off", 0}, {"every-1s", time.Second}} {
		b.Run(mode.name, func(b *testing.B) {
			c := fleettest.Start(b, 1, func(_ int, fc *fleet.Config) { fc.MaxLoad = 10 * rooms })
			h, err := New[*csim, int, *cplayer](quietMigrating{m: &migrating{}},
				Config{Secret: "bench", Checkpoint: Checkpoint{Interval: mode.interval}}, testrun.Logger(b, slog.LevelWarn))
			if err != nil {
				b.Fatal(err)
			}
			h.UseServer(c.Servers[0].Fleet)
			h.UseFleet(c.Servers[0].Fleet)
			testrun.GoRun(b, h.Run)
			<-h.Started()
			for i := range rooms {
				if _, err := h.OpenRoom(b.Context(), Info{Players: []string{fmt.Sprint("a", i), fmt.Sprint("b", i)}}); err != nil {
					b.Fatal(err)
				}
			}
			time.Sleep(2 * time.Second) // past the first round
			before, bytes0 := cputime.Process(), h.Stats().Checkpoints.Bytes
			start := time.Now()
			b.ResetTimer()
			for range b.N {
				time.Sleep(time.Second)
			}
			b.StopTimer()
			secs := time.Since(start).Seconds()
			perSec := (cputime.Process() - before).Seconds() / secs
			cpu[mode.name] = perSec
			late, _ := h.Lateness(0.99)
			st := h.Stats().Checkpoints
			b.ReportMetric(perSec*1000, "cpu-ms/s")
			b.ReportMetric(float64(st.Bytes-bytes0)/secs, "ckpt-B/s")
			b.ReportMetric(float64(late.Microseconds()), "late-p99-µs")
			b.ReportMetric(0, "ns/op")
			if mode.interval > 0 && st.Written < rooms {
				b.Errorf("%d checkpoints written, want one a room at least: %+v", st.Written, st)
			}
		})
	}
	if cpu["off"] > 0 && cpu["every-1s"] > 0 {
		b.Logf("%d rooms: CPU with a checkpoint a second %.1f ms/s, without %.1f ms/s: %.2fx", rooms,
			cpu["every-1s"]*1000, cpu["off"]*1000, cpu["every-1s"]/cpu["off"])
	}
}
