package matchmaking

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/room"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.DiscardHandler)

// withDefaults returns pl with its defaults, failing the test if they
// do not make a valid playlist.
func withDefaults(tb testing.TB, pl Playlist) Playlist {
	tb.Helper()
	pl, err := pl.withDefaults()
	if err != nil {
		tb.Fatal(err)
	}
	return pl
}

// cluster is N servers, each a fleet, a room host and a matchmaking
// module: a hosttest.Socketless, whose moves deliver players to the
// target's module.
type cluster struct {
	*hosttest.Socketless
	t         *testing.T
	nodes     []*node
	playlists []Playlist

	mu       sync.Mutex
	arrivals []arrival
}

type node struct {
	*hosttest.Node
	c  *cluster
	mm *Module
}

type moveRec struct {
	player, from, to, reason string
	waited                   time.Duration
}

type arrival struct {
	player, node string
	waited       time.Duration // as counted by the target on arrival
}

type clusterOpts struct {
	servers   int
	playlists []Playlist
	fleet     func(i int, cfg *fleet.Config)
	server    bool   // bind the hosts to their servers (load, drain)
	matchLen  uint64 // see game
	run       bool   // run the modules' loops
}

// startCluster starts the cluster in the current synctest bubble and
// waits until every server sees every other.
func startCluster(t *testing.T, o clusterOpts) *cluster {
	t.Helper()
	if len(o.playlists) == 0 {
		o.playlists = []Playlist{{Name: "duel"}}
	}
	c := &cluster{t: t, playlists: o.playlists}
	c.Socketless = hosttest.StartSocketless(t, hosttest.SocketlessOpts{
		Servers: o.servers, Fleet: o.fleet, Server: o.server, MatchLen: o.matchLen,
		Attach: func(hn *hosttest.Node) error {
			mm, err := New(Config{}, o.playlists...)
			if err != nil {
				return err
			}
			if err := hn.Host.Use(mm); err != nil {
				return err
			}
			mm.kit.Env, mm.kit.Manual = hn.Env(), !o.run // !run: the test steps it by hand
			n := &node{Node: hn, c: c, mm: mm}
			hn.Arrive = func(_ context.Context, id string, ho room.Handoff, now time.Time) {
				mm.arrive(id, ho, now, now)
				waited, ok := mm.Waited(id)
				if !ok {
					// A round on Run's goroutine matched it already: the
					// time it waited is what it was told on arriving.
					waited = toldWaited(c.Sent(id))
				}
				c.mu.Lock()
				c.arrivals = append(c.arrivals, arrival{player: id, node: hn.Srv.ID(), waited: waited})
				c.mu.Unlock()
			}
			c.nodes = append(c.nodes, n)
			return nil
		},
	})
	return c
}

// withCluster runs test in a synctest bubble on a cluster started with
// startCluster(t, o).
func withCluster(t *testing.T, o clusterOpts, test func(t *testing.T, c *cluster)) {
	synctest.Test(t, func(t *testing.T) { test(t, startCluster(t, o)) })
}

func (c *cluster) node(id string) *node { return hosttest.Find(c.nodes, id) }

// gather returns the servers in the order the playlist gathers, as the
// first server sees them.
func (c *cluster) gather(playlist string) []*node {
	var out []*node
	for _, n := range GatherOrder(c.playlist(playlist), c.nodes[0].Srv.Nodes()) {
		out = append(out, c.node(n.ID))
	}
	return out
}

// playlist returns the cluster's playlist called name.
func (c *cluster) playlist(name string) Playlist {
	for _, pl := range c.playlists {
		if pl.Name == name {
			return pl
		}
	}
	c.t.Fatalf("no playlist %s", name)
	return Playlist{}
}

// connect connects player id to n now.
func (c *cluster) connect(n *node, id string) { c.Connect(n.Srv.ID(), id) }

// queue connects player id to n and enqueues it.
func (c *cluster) queue(n *node, id, playlist string, rating *float64) {
	c.connect(n, id)
	now := time.Now()
	n.mm.enqueue(id, playlist, rating, now, now)
}

func (c *cluster) movesOf(id string) []moveRec { return moveRecs(c.MovesOf(id)) }

func (c *cluster) allMoves() []moveRec { return moveRecs(c.Moves()) }

func moveRecs(moves []hosttest.Move) []moveRec {
	var out []moveRec
	for _, m := range moves {
		var d handoff
		json.Unmarshal(m.Handoff.Data, &d)
		out = append(out, moveRec{player: m.Player, from: m.From, to: m.To, reason: m.Reason, waited: time.Duration(d.Waited)})
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// toldWaited returns the time the last queue.waiting packet of sent says
// its player waited, or 0.
func toldWaited(sent []any) time.Duration {
	for _, pk := range slices.Backward(sent) {
		if w, ok := pk.(WaitingPacket); ok {
			return time.Duration(w.WaitedMS) * time.Millisecond
		}
	}
	return 0
}
