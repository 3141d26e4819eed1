package lobby

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/room"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.DiscardHandler)

const cooldown = 3 * time.Second // room.Config.MoveCooldown's default

// cluster is N servers, each a fleet, a room host and a lobby module: a
// hosttest.Socketless, whose moves deliver players to the target's module.
type cluster struct {
	*hosttest.Socketless
	t     *testing.T
	nodes []*node
}

type node struct {
	*hosttest.Node
	c  *cluster
	lm *Module
}

type moveRec struct {
	player, from, to, reason string
	ho                       handoff
}

type clusterOpts struct {
	servers  int
	server   bool   // bind hosts to their servers (load, drain)
	matchLen uint64 // see game
	run      bool   // run the modules' loops
}

func startCluster(t *testing.T, o clusterOpts) *cluster {
	t.Helper()
	c := &cluster{t: t}
	c.Socketless = hosttest.StartSocketless(t, hosttest.SocketlessOpts{
		Servers: o.servers, Server: o.server, MatchLen: o.matchLen,
		Attach: func(hn *hosttest.Node) error {
			lm, err := New(Config{})
			if err != nil {
				return err
			}
			if err := hn.Host.Use(lm); err != nil {
				return err
			}
			lm.kit.Env, lm.kit.Manual = hn.Env(), !o.run // !run: the test steps it by hand
			hn.Arrive = func(ctx context.Context, id string, ho room.Handoff, now time.Time) {
				lm.arrive(ctx, id, ho, now, now)
			}
			c.nodes = append(c.nodes, &node{Node: hn, c: c, lm: lm})
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

func (c *cluster) connect(n *node, id string) { c.Connect(n.Srv.ID(), id) }

func (c *cluster) allMoves() []moveRec {
	var out []moveRec
	for _, m := range c.Moves() {
		var d handoff
		json.Unmarshal(m.Handoff.Data, &d)
		out = append(out, moveRec{player: m.Player, from: m.From, to: m.To, reason: m.Reason, ho: d})
	}
	return out
}

// last returns the last packet of type typ sent to id.
func (c *cluster) last(id, typ string) any {
	sent := c.Sent(id)
	for i := len(sent) - 1; i >= 0; i-- {
		switch p := sent[i].(type) {
		case StatePacket:
			if typ == TypeState {
				return p
			}
		case ErrorPacket:
			if typ == TypeError {
				return p
			}
		case LeftPacket:
			if typ == TypeLeft {
				return p
			}
		case map[string]string:
			if p["type"] == typ {
				return p
			}
		}
	}
	return nil
}

// guests connects players prefix-0 to prefix-(n-1) to node and returns
// their ids.
func (c *cluster) guests(node *node, prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", prefix, i)
		c.connect(node, ids[i])
	}
	return ids
}

// create connects id to n and creates a lobby; it returns the code.
func (c *cluster) create(n *node, id string) string {
	c.t.Helper()
	c.connect(n, id)
	n.lm.create(c.t.Context(), id, time.Now())
	code := n.lm.LobbyOf(id)
	if code == "" {
		c.t.Fatalf("%s created no lobby on %s: %v", id, n.Srv.ID(), c.last(id, TypeError))
	}
	return code
}
