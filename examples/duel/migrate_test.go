package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/examples/duel/bot"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/room"
)

// duelFleet runs servers of the duel on one in-memory backplane, and a
// load balancer in front of them that sends each request to the first
// server that is ready, as a load balancer's readiness probe would.
func duelFleet(t *testing.T, ids ...string) (servers []*muster.Server, lb string) {
	t.Helper()
	servers, addrs := duelServers(t, ids...)
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		for i, s := range servers {
			if st := s.Fleet().State(); st == fleet.StateReady || i == len(servers)-1 {
				r.SetURL(&url.URL{Scheme: "http", Host: addrs[i]})
				return
			}
		}
	}}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)
	return servers, front.URL + "/"
}

// A drain moves a running duel to the other server: both players are
// redirected there (reason migrate), are back in the same room, and the
// match goes on there, played to its end.
func TestDrainMovesDuel(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a bound for a stuck run, not a measure
	defer cancel()
	servers, lb := duelFleet(t, "duel-a", "duel-b")
	a, b := servers[0], servers[1]
	var bots []*bot.Bot
	for _, id := range []string{"ann", "bob"} {
		bt, err := bot.New(bot.Config{URL: lb, Player: id, Style: bot.StyleChase, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		testrun.GoRun(t, bt.Run)
		bots = append(bots, bt)
	}
	for _, bt := range bots {
		if err := bt.Wait(ctx, func(r bot.Report) bool { return r.Node() == a.NodeID() }); err != nil {
			t.Fatalf("%s not connected to %s: %v", bt.Report().Player, a.NodeID(), err)
		}
	}
	if err := a.Host().Open(ctx, room.Info{ID: "match-1", Kind: "duel", Players: []string{"ann", "bob"}}); err != nil {
		t.Fatal(err)
	}
	for _, bt := range bots {
		if err := bt.Wait(ctx, func(r bot.Report) bool { rm, ok := r.Room(); return ok && rm.Snapshots > 0 }); err != nil {
			t.Fatalf("%s never played: %v", bt.Report().Player, err)
		}
	}
	if err := a.Fleet().Drain(ctx); err != nil {
		t.Fatal(err)
	}
	for _, bt := range bots {
		before := 0
		if rm, ok := bt.Report().Room(); ok {
			before = rm.Snapshots
		}
		playing := func(r bot.Report) bool {
			return len(r.Rooms) == 1 && r.Node() == b.NodeID() && r.Rooms[0].Snapshots > before+20
		}
		if err := bt.Wait(ctx, playing); err != nil {
			t.Fatalf("%s not playing on %s after the drain: %v\n%s", bt.Report().Player, b.NodeID(), err, bt.Report().Log())
		}
		r := bt.Report()
		if rm := r.Rooms[0]; rm.ID != "match-1" || rm.Node != b.NodeID() {
			t.Errorf("%s: room %s on %s, want match-1 on %s", r.Player, rm.ID, rm.Node, b.NodeID())
		}
		last := r.Redirects[len(r.Redirects)-1]
		if last.Reason != room.ReasonMigrate || last.From != a.NodeID() || last.To != b.NodeID() {
			t.Errorf("%s: last redirect %+v, want %s to %s, reason migrate", r.Player, last, a.NodeID(), b.NodeID())
		}
		t.Logf("%s: pause between states across the move %v", r.Player, last.Pause.Round(time.Millisecond))
	}
	// The bots steer on after the move (they send inputs to the room's new
	// server) and one of them wins.
	for _, bt := range bots {
		if err := bt.Wait(ctx, func(r bot.Report) bool { return r.Ended() > 0 }); err != nil {
			t.Fatalf("%s: the moved match never ended: %v\n%s", bt.Report().Player, err, bt.Report().Log())
		}
		if rm := bt.Report().Rooms[0]; !strings.HasPrefix(rm.Reason, "won by ") || rm.Node != b.NodeID() {
			t.Errorf("%s: match-1 ended on %s with %q, want won on %s", bt.Report().Player, rm.Node, rm.Reason, b.NodeID())
		}
	}
}

// Restore refuses a snapshot it cannot read, and gives each player the
// fighter of the match it restores.
func TestDuelRestore(t *testing.T) {
	rng, _ := rand.NewPCG(1, 2).MarshalBinary()
	good, _ := json.Marshal(matchSnapshot{Players: []Fighter{{ID: "ann", X: 10, Score: 2}, {ID: "bob", X: 20}}, OrbX: 5, RNG: rng})
	m, fighters, err := Duel{}.Restore(room.Info{ID: "m"}, good)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.players) != 2 || fighters["ann"] != m.players[0] || fighters["ann"].Score != 2 || m.orbX != 5 {
		t.Errorf("restored %+v with fighters %v", m, fighters)
	}
	twice, _ := json.Marshal(matchSnapshot{Players: []Fighter{{ID: "ann"}, {ID: "ann"}}, RNG: rng})
	for name, data := range map[string][]byte{
		"garbage": []byte("{"), "no rng": []byte(`{"players":[]}`), "a fighter twice": twice,
	} {
		if _, _, err := (Duel{}).Restore(room.Info{ID: "m"}, data); err == nil {
			t.Errorf("%s restored", name)
		}
	}
}

// duelServers runs servers of the duel with ids on one in-memory
// backplane, and returns them and their addresses once each sees all of
// them ready.
func duelServers(t *testing.T, ids ...string) (servers []*muster.Server, addrs []string) {
	t.Helper()
	store := memory.NewStore(memory.Config{})
	for _, id := range ids {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg := muster.DefaultConfig()
		cfg.Security.Key = "0123456789abcdef0123456789abcdef"
		cfg.Server.Fleet.NodeID = id
		cfg.Server.Fleet.InternalAddress = l.Addr().String()
		cfg.Server.Fleet.Heartbeat = config.Duration(100 * time.Millisecond)
		bp, err := store.Cluster(cfg.Server.Fleet.Cluster)
		if err != nil {
			t.Fatal(err)
		}
		s, err := muster.New(Duel{}, cfg, append(options(),
			muster.WithBackplane(bp), muster.WithListener(l), muster.WithLogger(slog.New(slog.DiscardHandler)))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bp.Close() }) // once the server has stopped
		testrun.GoRun(t, s.Run)
		servers = append(servers, s)
		addrs = append(addrs, l.Addr().String())
	}
	testrun.WaitWithin(t, time.Minute, "each server sees the others, ready", func() bool {
		for _, s := range servers {
			n := 0
			for _, node := range s.Fleet().Nodes() {
				if node.HasRoom() {
					n++
				}
			}
			if n != len(servers) {
				return false
			}
		}
		return true
	})
	return servers, addrs
}
