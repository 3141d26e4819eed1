package room

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
)

// TestTicketBoundToItsCluster: two clusters that share the security key
// and the store each refuse the other's tickets, so a ticket redeemed in
// one cannot be redeemed again in the other (#39.6).
func TestTicketBoundToItsCluster(t *testing.T) {
	c := fleettest.Start(t, 1, func(_ int, cfg *fleet.Config) { cfg.Heartbeat = 100 * time.Millisecond })
	capCfg := fleet.Config{NodeID: "c0", Cluster: "cap", InternalAddress: "127.0.0.1:9100", Heartbeat: 100 * time.Millisecond}
	fleets := []*fleet.Fleet{c.Servers[0].Fleet, c.Add(capCfg).Fleet}
	var hosts []*Host[*csim, int, *cplayer]
	for _, f := range fleets {
		h := newHost(t, newCounter(), Config{Secret: "shared"})
		h.UseFleet(f)
		hosts = append(hosts, h)
	}
	ctx := t.Context()
	for i, names := range [][2]string{{"default", "cap"}, {"cap", "default"}} {
		from, to := hosts[i], hosts[1-i]
		tk, err := from.Tickets().Issue("p1")
		if err != nil {
			t.Fatal(err)
		}
		if id, err := from.Tickets().Redeem(ctx, tk); err != nil || id != "p1" {
			t.Fatalf("redeem on cluster %s: %q, %v", names[0], id, err)
		}
		if id, err := to.Tickets().Redeem(ctx, tk); !errors.Is(err, ErrTicket) {
			t.Fatalf("cluster %s welcomed %q with a ticket redeemed on cluster %s (err %v), want ErrTicket", names[1], id, names[0], err)
		}
		fresh, _ := from.Tickets().Issue("p2")
		if id, err := to.Tickets().Redeem(ctx, fresh); !errors.Is(err, ErrTicket) {
			t.Fatalf("cluster %s welcomed %q with an unused ticket of cluster %s (err %v), want ErrTicket", names[1], id, names[0], err)
		}
	}
}

// TestClusterTicketsForASignInService: a sign-in service mints for a
// cluster other than default with NewClusterTickets; a ticket it minted
// with NewTickets is refused there with a reason that says so.
func TestClusterTicketsForASignInService(t *testing.T) {
	c := fleettest.Start(t, 0, nil)
	f := c.Add(fleet.Config{NodeID: "c0", Cluster: "cap", InternalAddress: "127.0.0.1:9100"}).Fleet
	h := newHost(t, newCounter(), Config{Secret: "shared"})
	h.UseFleet(f)

	signIn, err := NewClusterTickets("shared", "cap", 0)
	if err != nil {
		t.Fatal(err)
	}
	tk, _ := signIn.Issue("p1")
	if id, err := h.Tickets().Redeem(t.Context(), tk); err != nil || id != "p1" {
		t.Fatalf("a ticket of NewClusterTickets(cap) on cluster cap: %q, %v", id, err)
	}
	dflt, _ := NewTickets("shared", 0)
	tk, _ = dflt.Issue("p2")
	_, err = h.Tickets().Redeem(t.Context(), tk)
	if !errors.Is(err, ErrTicket) || !strings.Contains(err.Error(), "of cluster default, not cap") {
		t.Fatalf("a ticket of NewTickets on cluster cap: %v, want ErrTicket naming both clusters", err)
	}
	if _, err := NewClusterTickets("shared", "", 0); !errors.Is(err, ErrConfig) {
		t.Fatalf("NewClusterTickets without a cluster: %v, want ErrConfig", err)
	}
}
