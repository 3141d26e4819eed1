package federation

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/muster-gg/muster/backplane/redis"
)

// TestRegisterOnRedis runs the register on the Redis backplane (miniredis):
// what one Home writes, another Home on the same Redis reads, and revoking
// through one is seen by the other at once.
func TestRegisterOnRedis(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	open := func() *env {
		bp, err := redis.Open(redis.Config{URL: mr.Addr(), Cluster: "home"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bp.Close() })
		return newEnvOn(t, HomeConfig{Limits: RateLimits{Announce: 2}}, bp, newClock())
	}
	a, b := open(), open()
	ctx := context.Background()
	nodeKey := a.createNode("au-sydney", "AU", true)
	s1, k1 := a.join(nodeKey)
	_, k2 := b.join(nodeKey)
	a.announce(k1, map[string]string{ServiceGame: "a:1"})
	b.announce(k2, map[string]string{ServiceGame: "b:1"})
	a.report(k1, report("r1", 1, "alice", "bob"))

	list := b.regions()
	if len(list.Regions) != 1 || !slices.Equal(list.Regions[0].Services[ServiceGame], []string{"a:1", "b:1"}) || list.Regions[0].Players != 2 {
		t.Fatalf("regions read by the other home: %+v", list.Regions)
	}
	// Rate limits are counted on Redis: shared by both homes.
	if res := a.do("POST", PathAnnounce, k1, nil); res.Status != http.StatusOK {
		t.Fatalf("second announce: %d", res.Status)
	}
	if res := b.do("POST", PathAnnounce, k1, nil); res.Status != http.StatusTooManyRequests {
		t.Fatalf("third announce through the other home: %d", res.Status)
	}
	if err := b.home.RevokeServer(ctx, s1); err != nil {
		t.Fatal(err)
	}
	if res := a.do("POST", PathRooms, k1, report("r1", 2, "alice")); res.Status != http.StatusUnauthorized {
		t.Fatalf("revoked through the other home: %d", res.Status)
	}
	nodes, err := a.home.Nodes(ctx)
	if err != nil || len(nodes) != 1 || len(nodes[0].Servers) != 2 {
		t.Fatalf("nodes %+v %v", nodes, err)
	}
	if _, err := a.home.Room(ctx, "r1"); err == nil {
		t.Fatal("the revoked server's room survived")
	}
}
