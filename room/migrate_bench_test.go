package room

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// quietMigrating is the quiet counter with the migrating game's
// Snapshot and Restore.
type quietMigrating struct {
	quietCounter
	m *migrating
}

func (g quietMigrating) Snapshot(r *Room[*csim, int, *cplayer]) ([]byte, error) {
	return g.m.Snapshot(r)
}

func (g quietMigrating) Restore(info Info, data []byte) (*csim, map[string]*cplayer, error) {
	return g.m.Restore(info, data)
}

// BenchmarkMoveRooms moves 1,000 running rooms (two seats each) from one
// server to the other, and back at the next op, as a drain does: over
// HTTP on loopback (the servers' MoveHandler, as in production), and
// straight from host to host (the transport's share). It reports the
// time per room moved and the moves' pauses, from freeze to the other
// server's answer.
func BenchmarkMoveRooms(b *testing.B) {
	const rooms = 1000
	for _, transport := range []string{"http", "direct"} {
		b.Run(transport, func(b *testing.B) {
			https := []*httptest.Server{httptest.NewUnstartedServer(nil), httptest.NewUnstartedServer(nil)}
			c := fleettest.Start(b, 2, func(i int, fc *fleet.Config) {
				fc.InternalAddress = https[i].Listener.Addr().String()
				fc.MaxLoad = 10 * rooms
			})
			hosts := make([]*Host[*csim, int, *cplayer], 2)
			for i, s := range c.Servers {
				h, err := New[*csim, int, *cplayer](quietMigrating{m: &migrating{}}, Config{Secret: "bench"}, testrun.Logger(b, slog.LevelWarn))
				if err != nil {
					b.Fatal(err)
				}
				h.UseServer(s.Fleet)
				h.UseFleet(s.Fleet)
				hosts[i] = h
				https[i].Config.Handler = h.MoveHandler()
				https[i].Start()
				b.Cleanup(https[i].Close)
				testrun.GoRun(b, h.Run)
				<-h.Started()
			}
			if transport == "direct" {
				byID := map[string]*Host[*csim, int, *cplayer]{c.Servers[0].ID(): hosts[0], c.Servers[1].ID(): hosts[1]}
				for _, h := range hosts {
					h.sendRoom = func(ctx context.Context, to fleet.Node, sealed []byte) error {
						return byID[to.ID].receiveRoom(ctx, sealed)
					}
				}
			}
			for i := range rooms {
				if _, err := hosts[0].OpenRoom(b.Context(), Info{Players: []string{fmt.Sprint("a", i), fmt.Sprint("b", i)}}); err != nil {
					b.Fatal(err)
				}
			}
			for range 100 { // each server sees the other, ready
				if len(c.Servers[0].Nodes()) == 2 && len(c.Servers[1].Nodes()) == 2 {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			from := 0
			b.ResetTimer()
			for b.Loop() {
				hosts[from].moveRooms(b.Context())
				if n := hosts[1-from].Rooms(); n != rooms {
					b.Fatalf("%d rooms moved to host %d, want %d; %+v %+v", n, 1-from, rooms, hosts[0].Stats().Moves, hosts[1].Stats().Moves)
				}
				from = 1 - from
			}
			b.StopTimer()
			var moved uint64
			var sum float64
			for _, h := range hosts {
				st := h.Stats().Moves
				moved += st.Moved
				sum += st.Pause.Sum
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(moved), "µs/room")
			b.ReportMetric(sum/float64(moved)*1000, "pause-ms/room")
			b.ReportMetric(0, "ns/op")
		})
	}
}
