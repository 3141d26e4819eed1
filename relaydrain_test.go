package muster_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// TestDrainingServerRelaysNoNewConnection: a server that drains answers a
// new connection for another server 503 before the upgrade, so that a
// load balancer tries another server, instead of relaying it and cutting
// it when it leaves (drain redirects that a round-robin balancer brought
// back to the draining server were cut so). What it relayed before the
// drain carries on.
func TestDrainingServerRelaysNoNewConnection(t *testing.T) {
	rd := testbin.StartRedis(t)
	a := startDrainingServer(t, rd.Addr, "a", 100, slowHeartbeat, time.Minute, quiet)
	b := startSlowServer(t, rd.Addr, "b", 100)
	seesReady(t, a, b)
	through := func(id string) (*playtest.Conn, int, error) {
		t.Helper()
		tk, err := b.Tickets().Issue(id)
		if err != nil {
			t.Fatal(err)
		}
		return playtest.TryDial(t, playtest.PlayURL("http://"+a.addr, "ticket="+tk+"&node=b"), nil)
	}
	before, _, err := through("before")
	if err != nil {
		t.Fatalf("relayed to b before the drain: %v", err)
	}

	// A part that holds the drain open until the test ends.
	release := make(chan struct{})
	a.Fleet().AddDrainer(fleet.DrainerFunc(func(ctx context.Context) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}))
	drained := make(chan error, 1)
	go func() { drained <- a.Fleet().Drain(context.Background()) }()
	defer func() { close(release); <-drained }()
	waitUntil(t, "a draining", func() bool { return a.Fleet().State() == fleet.StateDraining })
	// The relay is told by a drain part of its own, which the drain
	// starts beside the others just after: a connection made meanwhile
	// may still be relayed.
	waitUntil(t, "a draining server refuses a new connection to b", func() bool {
		c, status, err := through("during")
		if err == nil {
			c.CloseNow()
			return false
		}
		if status != http.StatusServiceUnavailable {
			t.Fatalf("a draining server answered %d (%v), want 503", status, err)
		}
		return true
	})
	// b welcomes the player who connected through a before the drain.
	if err := before.WritePacket("hello", map[string]string{"mode": "new"}); err != nil {
		t.Fatalf("the connection relayed before the drain: %v", err)
	}
	before.Next("welcome")
}
