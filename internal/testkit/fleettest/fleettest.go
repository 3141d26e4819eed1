// Package fleettest runs several fleet servers in one process on one
// in-memory store, for tests of the fleet and of the packages built on it.
//
// It is meant for testing/synctest bubbles: the store's clock is the
// bubble's, so heartbeats, expiries and cooldowns advance exactly with
// time.Sleep and synctest.Wait. Each server's backplane is a Faulty, so a
// test can cut a server off or make single operations fail.
package fleettest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/fleet"
)

// Heartbeat is the heartbeat interval of the servers a Cluster starts
// unless a configure function sets another.
const Heartbeat = 2 * time.Second

// Cluster is a set of servers on one store.
type Cluster struct {
	Store   *memory.Store
	Servers []*Server

	tb     testing.TB
	logger *slog.Logger
}

// Server is one running server of a Cluster.
type Server struct {
	*fleet.Fleet
	// Backplane is the server's own view of the store; cut it to make the
	// server unreachable.
	Backplane *Faulty

	cancel context.CancelFunc
	done   chan struct{}
}

// Start starts n servers named s0, s1, ... on a new store, ready, with
// configure (may be nil) applied to each config. Every server is stopped
// when the test ends.
func Start(tb testing.TB, n int, configure func(i int, cfg *fleet.Config)) *Cluster {
	tb.Helper()
	c := &Cluster{
		Store:  memory.NewStore(memory.Config{}),
		tb:     tb,
		logger: slog.New(slog.DiscardHandler),
	}
	for i := range n {
		cfg := fleet.Config{
			NodeID:          fmt.Sprintf("s%d", i),
			InternalAddress: fmt.Sprintf("127.0.0.1:%d", 9000+i),
			Heartbeat:       Heartbeat,
		}
		if configure != nil {
			configure(i, &cfg)
		}
		c.Add(cfg)
	}
	return c
}

// Add starts one more server with cfg (NodeID required), marks it ready,
// and returns it. It joins cfg.Cluster of the store ("default" when
// empty), so one store can hold several clusters.
func (c *Cluster) Add(cfg fleet.Config) *Server {
	c.tb.Helper()
	bp, err := c.Store.Cluster(cmp.Or(cfg.Cluster, "default"))
	if err != nil {
		c.tb.Fatal(err)
	}
	fb := NewFaulty(bp)
	f, err := fleet.New(cfg, fb, c.logger)
	if err != nil {
		c.tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{Fleet: f, Backplane: fb, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		f.Run(ctx)
	}()
	f.MarkReady()
	c.Servers = append(c.Servers, s)
	c.tb.Cleanup(s.Stop)
	return s
}

// Stop ends the server's Run (it leaves the fleet if it still can) and
// waits for it. Safe to call twice.
func (s *Server) Stop() {
	s.cancel()
	<-s.done
}

// Kill stops the server as SIGKILL would: it stops heartbeating without
// leaving, so the others see it go only when its record expires.
func (s *Server) Kill() {
	s.Backplane.Cut(true)
	s.Stop()
}

// Stored returns server id's record as the store holds it now (as any
// server's next heartbeat reads it), decoded without checking its
// signature, and whether the store holds one.
func (s *Server) Stored(tb testing.TB, id string) (fleet.Node, bool) {
	tb.Helper()
	nodes, err := s.Backplane.Nodes(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	for _, bn := range nodes {
		if bn.ID == id {
			var n fleet.Node
			if err := json.Unmarshal(bn.Data, &n); err != nil {
				tb.Fatalf("record of %s: %v", id, err)
			}
			return n, true
		}
	}
	return fleet.Node{}, false
}
