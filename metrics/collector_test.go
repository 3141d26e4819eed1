package metrics_test

import (
	"maps"
	"math"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/metrics"
	"github.com/muster-gg/muster/relay"
	"github.com/muster-gg/muster/room"
)

type fakeFleet struct {
	self     fleet.Node
	nodes    int
	attached bool
}

func (f fakeFleet) Self() fleet.Node    { return f.self }
func (f fakeFleet) Nodes() []fleet.Node { return make([]fleet.Node, f.nodes) }
func (f fakeFleet) Attached() bool      { return f.attached }

type fakeRooms struct {
	stats  room.Stats
	passes uint64
}

func (f fakeRooms) Stats() room.Stats { return f.stats }
func (f fakeRooms) Lateness(q float64) (time.Duration, uint64) {
	if f.passes == 0 {
		return 0, 0
	}
	return time.Duration(q * float64(time.Millisecond)), f.passes
}

type fakeRelay relay.Stats

func (f fakeRelay) Stats() relay.Stats { return relay.Stats(f) }

// TestCollector checks every series against sources with known values.
func TestCollector(t *testing.T) {
	t.Parallel()
	fl := fakeFleet{
		self: fleet.Node{
			ID: "s0", Cluster: "eu", Region: "eu-west", State: fleet.StateDraining, Load: 12, MaxLoad: 200,
			Stats: map[string]int64{"queue:duel": 3, "queue:squad": 0, "rooms": 4},
		},
		nodes:    3,
		attached: true,
	}
	rooms := fakeRooms{
		stats: room.Stats{
			Rooms: 4, Seated: 9, Connected: 7, Load: 11,
			Redirects: map[string]uint64{room.ReasonQueue: 5, "custom": 1}, Handoffs: 6, Limited: 2,
			Checkpoints: room.CheckpointStats{Written: 40, Bytes: 12000, Skipped: 2, Failed: 1, Resumed: 3, Refused: 1},
		},
		passes: 1000,
	}
	rl := fakeRelay{Active: 2, Relayed: 10, Fallbacks: 1, Refused: 3, BytesToNode: 300, BytesToClient: 4000, Verified: 8, Rejected: 2}

	fleetSeries := map[string]float64{
		`muster_server_info{cluster="eu",node_id="s0",region="eu-west"}`: 1,
		`muster_server_state{state="starting"}`:                          0,
		`muster_server_state{state="ready"}`:                             0,
		`muster_server_state{state="full"}`:                              0,
		`muster_server_state{state="draining"}`:                          1,
		`muster_server_state{state="leaving"}`:                           0,
		`muster_server_load`:                                             12,
		`muster_server_max_load`:                                         200,
		`muster_queue_length{playlist="duel"}`:                           3,
		`muster_queue_length{playlist="squad"}`:                          0,
		`muster_fleet_nodes`:                                             3,
		`muster_backplane_attached`:                                      1,
	}
	roomSeries := map[string]float64{
		`muster_rooms`:                                    4,
		`muster_players_connected`:                        7,
		`muster_players_seated`:                           9,
		`muster_redirects_total{reason="rejoin"}`:         0,
		`muster_redirects_total{reason="queue"}`:          5,
		`muster_redirects_total{reason="lobby"}`:          0,
		`muster_redirects_total{reason="drain"}`:          0,
		`muster_redirects_total{reason="custom"}`:         1,
		`muster_handoffs_total`:                           6,
		`muster_connections_limited_total`:                2,
		`muster_step_lateness_seconds{quantile="0.5"}`:    0.0005,
		`muster_step_lateness_seconds{quantile="0.9"}`:    0.0009,
		`muster_step_lateness_seconds{quantile="0.99"}`:   0.00099,
		`muster_step_lateness_seconds{quantile="0.999"}`:  0.000999,
		`muster_step_passes_total`:                        1000,
		`muster_room_checkpoints_total{result="written"}`: 40,
		`muster_room_checkpoints_total{result="skipped"}`: 2,
		`muster_room_checkpoints_total{result="failed"}`:  1,
		`muster_room_checkpoint_bytes_total`:              12000,
		`muster_rooms_resumed_total{result="resumed"}`:    3,
		`muster_rooms_resumed_total{result="refused"}`:    1,
	}
	relaySeries := map[string]float64{
		`muster_relay_connections_active`:                  2,
		`muster_relay_connections_total`:                   10,
		`muster_relay_fallbacks_total`:                     1,
		`muster_relay_refusals_total`:                      3,
		`muster_relay_bytes_total{direction="to_node"}`:    300,
		`muster_relay_bytes_total{direction="to_client"}`:  4000,
		`muster_relay_signatures_total{result="verified"}`: 8,
		`muster_relay_signatures_total{result="rejected"}`: 2,
	}
	union := func(ms ...map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for _, m := range ms {
			maps.Copy(out, m)
		}
		return out
	}

	for _, tc := range []struct {
		name   string
		src    metrics.Sources
		want   map[string]float64
		absent []string
	}{
		{
			name: "every part",
			src:  metrics.Sources{Fleet: fl, Rooms: rooms, Relay: rl},
			want: union(fleetSeries, roomSeries, relaySeries),
		},
		{
			name:   "rooms alone report their load",
			src:    metrics.Sources{Rooms: rooms},
			want:   union(roomSeries, map[string]float64{`muster_server_load`: 11}),
			absent: []string{`muster_server_max_load`, `muster_fleet_nodes`, `muster_relay_connections_total`},
		},
		{
			name: "no pass measured yet",
			src:  metrics.Sources{Rooms: fakeRooms{stats: room.Stats{}}, Quantiles: []float64{0.99}},
			want: map[string]float64{
				`muster_rooms`: 0,
				`muster_step_lateness_seconds{quantile="0.99"}`: math.NaN(),
				`muster_step_passes_total`:                      0,
				`muster_redirects_total{reason="drain"}`:        0,
			},
			absent: []string{`muster_step_lateness_seconds{quantile="0.5"}`},
		},
		{
			name:   "relay alone",
			src:    metrics.Sources{Relay: rl},
			want:   relaySeries,
			absent: []string{`muster_server_load`, `muster_rooms`},
		},
		{
			name:   "nothing",
			src:    metrics.Sources{},
			absent: []string{`muster_server_load`, `muster_rooms`, `muster_relay_connections_total`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(metrics.NewCollector(tc.src))
			srv := httptest.NewServer(metrics.Handler(reg))
			defer srv.Close()
			m := scrape(t, srv.URL)
			if problem := want(tc.want)(m); problem != "" {
				t.Error(problem)
			}
			for _, name := range tc.absent {
				if _, ok := m[name]; ok {
					t.Errorf("%s is present", name)
				}
			}
		})
	}
}
