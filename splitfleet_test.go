package muster_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/room"
)

// onStore starts server id of cluster, signing with key, on store, with a
// short heartbeat.
func onStore(t *testing.T, store *memory.Store, id, cluster, key string) *testServer {
	t.Helper()
	bp, err := store.Cluster(cluster)
	if err != nil {
		t.Fatal(err)
	}
	cfg := muster.DefaultConfig()
	cfg.Server.Fleet.NodeID = id
	cfg.Server.Fleet.Cluster = cluster
	cfg.Server.Fleet.Heartbeat = config.Duration(100 * time.Millisecond)
	cfg.Security.Key = key
	return startServer(t, cfg, muster.WithBackplane(bp))
}

// get returns the status and body of GET http://addr+path.
func get(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	res, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// A ticket redeemed on a server of the cluster default is refused on a
// server of the cluster cap that shares the key and the store (#39.6).
func TestTicketRefusedByAnotherCluster(t *testing.T) {
	store := memory.NewStore(memory.Config{})
	const key = "one key for both clusters"
	a := onStore(t, store, "a", "default", key)
	b := onStore(t, store, "b", "cap", key)

	tk, err := a.Tickets().Issue("p1")
	if err != nil {
		t.Fatal(err)
	}
	welcome(t, playtest.DialPlay(t, "http://"+a.addr, "ticket="+tk), "p1")
	c := playtest.DialPlay(t, "http://"+b.addr, "ticket="+tk)
	c.SendText(`{"type":"hello","data":{"mode":"new"}}`)
	if code := c.CloseCode(); code != room.StatusBadTicket {
		t.Fatalf("cluster cap, given a ticket redeemed on cluster default: close %d, want %d", code, room.StatusBadTicket)
	}
}

// Three servers on one store, one with another security key: the odd one
// fails its readiness probe naming the key, the others list it on their
// capacity probe, dashboard feed and metrics (#39.7).
func TestForeignKeyVisible(t *testing.T) {
	store := memory.NewStore(memory.Config{})
	a := onStore(t, store, "a", "default", "the fleet's security key")
	onStore(t, store, "b", "default", "the fleet's security key")
	x := onStore(t, store, "x", "default", "another security key, 16+")

	waitUntil(t, "x answers ready 503 foreign-key", func() bool {
		code, body := get(t, x.addr, "/muster/server/ready")
		return code == http.StatusServiceUnavailable && strings.HasPrefix(body, "foreign-key: ") &&
			strings.Contains(body, "MUSTER__SECURITY__KEY")
	})
	waitUntil(t, "a lists x as foreign in its capacity, feed and metrics", func() bool {
		_, capacity := get(t, a.addr, "/muster/server/capacity")
		_, feed := get(t, a.addr, "/muster/dashboard/nodes")
		return strings.Contains(capacity, `"foreign":["x"]`) && strings.Contains(feed, `"foreign":["x"]`) &&
			strings.Contains(metricsOf(t, a.addr), "\nmuster_fleet_foreign_nodes 1\n")
	})
	if code, body := get(t, a.addr, "/muster/server/ready"); code != http.StatusOK {
		t.Errorf("a, with the key of most servers, answers ready %d %q", code, body)
	}
	if m := metricsOf(t, x.addr); !strings.Contains(m, "\nmuster_fleet_foreign_nodes 2\n") {
		t.Errorf("x's metrics: %s", grepLines(m, "foreign"))
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return fmt.Sprint(out)
}
