package metrics

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/relay"
	"github.com/muster-gg/muster/room"
)

// Fleet is what a Collector reads of a server's fleet membership.
// *fleet.Fleet implements it.
type Fleet interface {
	// Self returns this server's record: state, load, max-load and the
	// statistics its modules publish ("queue:<playlist>").
	Self() fleet.Node
	// Nodes returns the live servers in view, this one included.
	Nodes() []fleet.Node
	// Attached reports whether the last heartbeat reached the backplane.
	Attached() bool
}

// recordRejecter is a Fleet that counts the records it dropped for their
// signature, as *fleet.Fleet does.
type recordRejecter interface{ RejectedRecords() int64 }

// foreignLister is a Fleet that lists the servers of its cluster signed
// with another key, as *fleet.Fleet does.
type foreignLister interface{ Foreign() []string }

// Rooms is what a Collector reads of a room host. Every *room.Host
// implements it, whatever its type parameters.
type Rooms interface {
	// Stats returns the host's counters.
	Stats() room.Stats
	// Lateness returns the quantile q of how late room passes started
	// after their tick, and the number of passes measured.
	Lateness(q float64) (time.Duration, uint64)
}

// Relay is what a Collector reads of a relay. *relay.Relay implements it.
type Relay interface {
	// Stats returns the relay's counters.
	Stats() relay.Stats
}

// Sources are the parts of a server a Collector reports on. A nil part is
// left out, with its series.
type Sources struct {
	// Fleet gives the server's identity, state, load and queues.
	Fleet Fleet
	// Rooms gives rooms, players, redirects, handoffs and step lateness.
	Rooms Rooms
	// Relay gives the relayed connections and bytes.
	Relay Relay
	// Quantiles are the step-lateness quantiles reported. Default 0.5,
	// 0.9, 0.99 and 0.999.
	Quantiles []float64
}

// Collector is a prometheus.Collector for one game server. Create it with
// NewCollector and register it on a prometheus.Registry. It is safe for
// concurrent use.
type Collector struct {
	src Sources

	info, state, load, maxLoad, queue, nodes, attached *prometheus.Desc
	rejected, foreign                                  *prometheus.Desc

	rooms, connected, seated, redirects, handoffs, limited, lateness, passes *prometheus.Desc
	moved, moveFailed, movePause                                             *prometheus.Desc
	checkpoints, checkpointBytes, resumed                                    *prometheus.Desc

	relayActive, relayTotal, relayFallbacks, relayRefusals, relayBytes, relaySignatures *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// states are reported by muster_server_state, one series each, so that a
// server's state is a set of 0/1 gauges that alerts can match.
var states = []fleet.State{fleet.StateStarting, fleet.StateReady, fleet.StateFull, fleet.StateDraining, fleet.StateLeaving}

// reasons are reported by muster_redirects_total even before the first
// redirect, so that rate() has a series to start from.
var reasons = []string{room.ReasonRejoin, room.ReasonQueue, room.ReasonLobby, room.ReasonDrain, room.ReasonMigrate}

// NewCollector returns a Collector reading src. It reports, for each part
// given:
//
// Fleet:
//   - muster_server_info{node_id,cluster,region}: always 1.
//   - muster_server_state{state}: 1 for the server's state (starting,
//     ready, full, draining, leaving), 0 for the others.
//   - muster_server_load and muster_server_max_load: the load and its
//     budget, in the game's load units.
//   - muster_queue_length{playlist}: entries waiting in each playlist's
//     queue, from the fleet statistics "queue:<playlist>".
//   - muster_fleet_nodes: live servers in this server's view, itself
//     included.
//   - muster_backplane_attached: 1 when the last heartbeat reached the
//     backplane.
//   - muster_fleet_records_rejected_total: fleet records dropped from the
//     view as unsigned or signed with another key (see fleet.Config.Key).
//   - muster_fleet_foreign_nodes: servers of the cluster whose records
//     this server drops now, signed with another muster.security.key
//     (fleet.Fleet.Foreign): above 0, the fleet is split in two that
//     never match players together.
//
// Rooms:
//   - muster_rooms: running rooms.
//   - muster_players_connected and muster_players_seated: players connected
//     to this server, and players with a seat in one of its rooms, present
//     or away.
//   - muster_redirects_total{reason}: clients sent to another server.
//   - muster_handoffs_total: handoffs written for players moved away.
//   - muster_connections_limited_total: connections closed for sending
//     messages faster than muster.room.limits.messages allows (4005).
//   - muster_step_lateness_seconds{quantile}: how late room passes started
//     after their tick (NaN until the first pass), and
//     muster_step_passes_total, the passes measured.
//   - muster_rooms_moved_total{direction}: rooms moved to another server
//     ("out") and taken from one ("in") while running (room.Migrator).
//   - muster_room_moves_failed_total: rooms a drain tried to move that
//     stayed (no server took them in time, too large, refused).
//   - muster_room_move_pause_seconds: a histogram of the moves' pauses,
//     from a room's freeze here to the other server's answer that it runs
//     there.
//   - muster_room_checkpoints_total{result}: rooms' checkpoints (a game
//     that implements room.Migrator, muster.room.checkpoint.interval set)
//     "written" to the backplane, "skipped" as over
//     muster.room.migrate.max-bytes, or "failed" (the game's Snapshot or
//     the backplane); muster_room_checkpoint_bytes_total, the bytes of
//     those written (its rate is this server's checkpoint bytes per
//     second).
//   - muster_rooms_resumed_total{result}: rooms of dead servers
//     "resumed" here from their checkpoints, or "refused" (signed with
//     another key, of another server, expired, unreadable, or their
//     players held by a live server).
//
// Relay:
//   - muster_relay_connections_active, muster_relay_connections_total and
//     muster_relay_fallbacks_total: relayed connections open and relayed so
//     far, and relay attempts served locally instead.
//   - muster_relay_refusals_total: relay attempts the target server
//     refused with a 4xx answer to the client (a foreign Origin, an
//     address over its limit), which was passed on to the client.
//   - muster_relay_bytes_total{direction}: message bytes relayed
//     "to_node" and "to_client".
//   - muster_relay_signatures_total{result}: incoming relayed requests
//     whose signature was "verified" or "rejected".
//
// Without a Fleet, muster_server_load is the room host's load.
func NewCollector(src Sources) *Collector {
	if len(src.Quantiles) == 0 {
		src.Quantiles = []float64{0.5, 0.9, 0.99, 0.999}
	}
	d := prometheus.NewDesc
	return &Collector{
		src:      src,
		info:     d("muster_server_info", "This server's identity in its fleet; always 1.", []string{"node_id", "cluster", "region"}, nil),
		state:    d("muster_server_state", "1 for this server's state, 0 for the others.", []string{"state"}, nil),
		load:     d("muster_server_load", "This server's load, in the game's load units.", nil, nil),
		maxLoad:  d("muster_server_max_load", "This server's load budget; at it the server is full.", nil, nil),
		queue:    d("muster_queue_length", "Entries waiting in a playlist's queue on this server.", []string{"playlist"}, nil),
		nodes:    d("muster_fleet_nodes", "Live servers in this server's view of the fleet, itself included.", nil, nil),
		attached: d("muster_backplane_attached", "1 when the last heartbeat reached the backplane, 0 while serving alone.", nil, nil),
		rejected: d("muster_fleet_records_rejected_total", "Fleet records dropped from the view as unsigned or signed with another key.", nil, nil),
		foreign:  d("muster_fleet_foreign_nodes", "Servers of the cluster whose records this server drops, signed with another muster.security.key: the fleet is split.", nil, nil),

		rooms:      d("muster_rooms", "Running rooms.", nil, nil),
		connected:  d("muster_players_connected", "Players connected to this server.", nil, nil),
		seated:     d("muster_players_seated", "Players with a seat in one of this server's rooms, present or away.", nil, nil),
		redirects:  d("muster_redirects_total", "Clients sent to another server, by reason.", []string{"reason"}, nil),
		handoffs:   d("muster_handoffs_total", "Handoffs written for players moved to another server.", nil, nil),
		limited:    d("muster_connections_limited_total", "Connections closed for sending messages too fast (4005).", nil, nil),
		lateness:   d("muster_step_lateness_seconds", "Quantiles of how late room passes started after their tick.", []string{"quantile"}, nil),
		passes:     d("muster_step_passes_total", "Room passes measured for muster_step_lateness_seconds.", nil, nil),
		moved:      d("muster_rooms_moved_total", "Running rooms moved to another server (out) or taken from one (in).", []string{"direction"}, nil),
		moveFailed: d("muster_room_moves_failed_total", "Rooms a drain tried to move to another server that stayed.", nil, nil),
		movePause:  d("muster_room_move_pause_seconds", "Pauses of the rooms moved: from the freeze here to the other server's answer that the room runs there.", nil, nil),

		checkpoints:     d("muster_room_checkpoints_total", "Rooms' checkpoints written to the backplane, skipped as too large, or failed.", []string{"result"}, nil),
		checkpointBytes: d("muster_room_checkpoint_bytes_total", "Bytes of the rooms' checkpoints written to the backplane.", nil, nil),
		resumed:         d("muster_rooms_resumed_total", "Rooms of dead servers resumed here from their checkpoints, or refused.", []string{"result"}, nil),

		relayActive:     d("muster_relay_connections_active", "WebSocket connections being relayed to another server.", nil, nil),
		relayTotal:      d("muster_relay_connections_total", "WebSocket connections relayed to another server.", nil, nil),
		relayFallbacks:  d("muster_relay_fallbacks_total", "Relay attempts served locally because the target could not be reached.", nil, nil),
		relayRefusals:   d("muster_relay_refusals_total", "Relay attempts the target refused with a 4xx answer to the client, passed on to it.", nil, nil),
		relayBytes:      d("muster_relay_bytes_total", "Message bytes relayed, by direction.", []string{"direction"}, nil),
		relaySignatures: d("muster_relay_signatures_total", "Incoming relayed requests, by signature check result.", []string{"result"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	if c.src.Fleet != nil {
		for _, d := range []*prometheus.Desc{c.info, c.state, c.maxLoad, c.queue, c.nodes, c.attached} {
			ch <- d
		}
		if _, ok := c.src.Fleet.(recordRejecter); ok {
			ch <- c.rejected
		}
		if _, ok := c.src.Fleet.(foreignLister); ok {
			ch <- c.foreign
		}
	}
	if c.src.Fleet != nil || c.src.Rooms != nil {
		ch <- c.load
	}
	if c.src.Rooms != nil {
		for _, d := range []*prometheus.Desc{c.rooms, c.connected, c.seated, c.redirects, c.handoffs, c.limited, c.lateness, c.passes, c.moved, c.moveFailed, c.movePause, c.checkpoints, c.checkpointBytes, c.resumed} {
			ch <- d
		}
	}
	if c.src.Relay != nil {
		for _, d := range []*prometheus.Desc{c.relayActive, c.relayTotal, c.relayFallbacks, c.relayRefusals, c.relayBytes, c.relaySignatures} {
			ch <- d
		}
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}

	if f := c.src.Fleet; f != nil {
		self := f.Self()
		gauge(c.info, 1, self.ID, self.Cluster, self.Region)
		for _, s := range states {
			gauge(c.state, b2f(self.State == s), string(s))
		}
		gauge(c.load, float64(self.Load))
		gauge(c.maxLoad, float64(self.MaxLoad))
		for name, v := range self.Stats {
			if pl, ok := strings.CutPrefix(name, "queue:"); ok {
				gauge(c.queue, float64(v), pl)
			}
		}
		gauge(c.nodes, float64(len(f.Nodes())))
		gauge(c.attached, b2f(f.Attached()))
		if r, ok := f.(recordRejecter); ok {
			counter(c.rejected, float64(r.RejectedRecords()))
		}
		if fl, ok := f.(foreignLister); ok {
			gauge(c.foreign, float64(len(fl.Foreign())))
		}
	}

	if r := c.src.Rooms; r != nil {
		st := r.Stats()
		if c.src.Fleet == nil {
			gauge(c.load, float64(st.Load))
		}
		gauge(c.rooms, float64(st.Rooms))
		gauge(c.connected, float64(st.Connected))
		gauge(c.seated, float64(st.Seated))
		for _, reason := range reasons {
			if _, ok := st.Redirects[reason]; !ok {
				counter(c.redirects, 0, reason)
			}
		}
		for reason, n := range st.Redirects {
			counter(c.redirects, float64(n), reason)
		}
		counter(c.handoffs, float64(st.Handoffs))
		counter(c.limited, float64(st.Limited))
		var passes uint64
		for _, q := range c.src.Quantiles {
			d, n := r.Lateness(q)
			v := d.Seconds()
			if n == 0 {
				v = math.NaN()
			}
			passes = max(passes, n) // passes may land between two calls
			gauge(c.lateness, v, strconv.FormatFloat(q, 'g', -1, 64))
		}
		counter(c.passes, float64(passes))
		c.collectMoves(ch, st.Moves)
		c.collectCheckpoints(ch, st.Checkpoints)
	}

	if r := c.src.Relay; r != nil {
		st := r.Stats()
		gauge(c.relayActive, float64(st.Active))
		counter(c.relayTotal, float64(st.Relayed))
		counter(c.relayFallbacks, float64(st.Fallbacks))
		counter(c.relayRefusals, float64(st.Refused))
		counter(c.relayBytes, float64(st.BytesToNode), "to_node")
		counter(c.relayBytes, float64(st.BytesToClient), "to_client")
		counter(c.relaySignatures, float64(st.Verified), "verified")
		counter(c.relaySignatures, float64(st.Rejected), "rejected")
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// collectCheckpoints reports the rooms' checkpoints and the rooms resumed
// from them.
func (c *Collector) collectCheckpoints(ch chan<- prometheus.Metric, ck room.CheckpointStats) {
	for _, m := range []struct {
		d     *prometheus.Desc
		v     uint64
		label string
	}{
		{c.checkpoints, ck.Written, "written"}, {c.checkpoints, ck.Skipped, "skipped"}, {c.checkpoints, ck.Failed, "failed"},
		{c.resumed, ck.Resumed, "resumed"}, {c.resumed, ck.Refused, "refused"},
	} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.CounterValue, float64(m.v), m.label)
	}
	ch <- prometheus.MustNewConstMetric(c.checkpointBytes, prometheus.CounterValue, float64(ck.Bytes))
}

// collectMoves reports the rooms moved and their pauses.
func (c *Collector) collectMoves(ch chan<- prometheus.Metric, mv room.MoveStats) {
	ch <- prometheus.MustNewConstMetric(c.moved, prometheus.CounterValue, float64(mv.Moved), "out")
	ch <- prometheus.MustNewConstMetric(c.moved, prometheus.CounterValue, float64(mv.Received), "in")
	ch <- prometheus.MustNewConstMetric(c.moveFailed, prometheus.CounterValue, float64(mv.Failed))
	buckets := make(map[float64]uint64, len(room.MovePauseBounds))
	for i, b := range room.MovePauseBounds {
		if i < len(mv.Pause.Counts) {
			buckets[b] = mv.Pause.Counts[i]
		}
	}
	ch <- prometheus.MustNewConstHistogram(c.movePause, mv.Pause.Count, mv.Pause.Sum, buckets)
}
