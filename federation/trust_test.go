package federation

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/backplane"
)

// trustFixture: au (approved) with servers s1, s2 and a revoked s3; fr
// (approved) with one server; gone (revoked) with one server.
type trustFixture struct {
	*env
	auKey, frKey, goneKey               string
	s1, s2, s3, fr1, gone1              string // server ids
	s1Key, s2Key, s3Key, frSrvKey       string
	goneSrvKey, unknownNode, unknownSrv string
}

func newTrustFixture(t *testing.T) *trustFixture {
	t.Helper()
	f := &trustFixture{env: newEnv(t, HomeConfig{})}
	f.auKey = f.createNode("au-sydney", "AU", true)
	f.frKey = f.createNode("fr-paris", "FR", true)
	f.goneKey = f.createNode("gone", "DE", true)
	f.s1, f.s1Key = f.join(f.auKey)
	f.s2, f.s2Key = f.join(f.auKey)
	f.s3, f.s3Key = f.join(f.auKey)
	f.fr1, f.frSrvKey = f.join(f.frKey)
	f.gone1, f.goneSrvKey = f.join(f.goneKey)
	ctx := context.Background()
	if err := f.home.RevokeServer(ctx, f.s3); err != nil {
		t.Fatal(err)
	}
	if err := f.home.RevokeNode(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	f.unknownNode = newKey(kindNode)
	f.unknownSrv = newKey(kindServer)
	return f
}

func TestDoorsAndTrust(t *testing.T) {
	t.Parallel()
	f := newTrustFixture(t)
	game := map[string]string{ServiceGame: "203.0.113.9:22002"}
	room := roomRequest{RoomReport: RoomReport{RoomID: "r1", Members: []string{"p1"}}, Seq: 1}
	upload := make([]byte, 16)
	admin := PathAdmin + "/nodes"
	approve := PathAdmin + "/nodes/fr-paris/approve"
	tests := []struct {
		name         string
		method, path string
		key          string
		body         any
		status       int
		code         string
	}{
		// Each kind of key at its own door.
		{"node key enrols", "POST", PathJoin, f.auKey, joinRequest{}, 201, ""},
		{"server key announces", "POST", PathAnnounce, f.s1Key, announceRequest{Services: game}, 200, ""},
		{"server key reports a room", "POST", PathRooms, f.s1Key, room, 200, ""},
		{"server key self-tests", "POST", PathSelfTest, f.s1Key, upload, 200, ""},
		{"anyone reads regions", "GET", PathRegions, "", nil, 200, ""},
		{"admin lists", "GET", admin, adminToken, nil, 200, ""},

		// A node key only enrols.
		{"node key cannot announce", "POST", PathAnnounce, f.auKey, announceRequest{Services: game}, 403, "forbidden"},
		{"node key cannot self-test", "POST", PathSelfTest, f.auKey, upload, 403, "forbidden"},
		{"node key cannot report rooms", "POST", PathRooms, f.auKey, room, 403, "forbidden"},
		{"node key cannot approve", "POST", approve, f.auKey, nil, 403, "forbidden"},
		{"node key cannot read the register", "GET", admin, f.auKey, nil, 403, "forbidden"},

		// A server key only announces and self-tests.
		{"server key cannot enrol", "POST", PathJoin, f.s1Key, joinRequest{}, 403, "forbidden"},
		{"server key cannot approve", "POST", approve, f.s1Key, nil, 403, "forbidden"},
		{"server key cannot read the register", "GET", admin, f.s1Key, nil, 403, "forbidden"},
		{"server key cannot read a node", "GET", PathAdmin + "/nodes/au-sydney", f.s1Key, nil, 403, "forbidden"},
		{"server key cannot create nodes", "POST", admin, f.s1Key, NodeSpec{ID: "x", Country: "AU"}, 403, "forbidden"},
		{"server key cannot revoke", "POST", PathAdmin + "/servers/" + f.fr1 + "/revoke", f.s1Key, nil, 403, "forbidden"},

		// Unknown keys.
		{"no key at join", "POST", PathJoin, "", joinRequest{}, 401, "unauthorized"},
		{"no key at announce", "POST", PathAnnounce, "", announceRequest{}, 401, "unauthorized"},
		{"unknown node key", "POST", PathJoin, f.unknownNode, joinRequest{}, 401, "unauthorized"},
		{"unknown server key", "POST", PathAnnounce, f.unknownSrv, announceRequest{}, 401, "unauthorized"},
		{"malformed key", "POST", PathAnnounce, "mfs_short", announceRequest{}, 401, "unauthorized"},
		{"admin token is no server key", "POST", PathAnnounce, adminToken, announceRequest{}, 401, "unauthorized"},

		// Revoked keys.
		{"revoked server", "POST", PathAnnounce, f.s3Key, announceRequest{Services: game}, 401, "revoked"},
		{"revoked server cannot report rooms", "POST", PathRooms, f.s3Key, room, 401, "revoked"},
		{"revoked node key", "POST", PathJoin, f.goneKey, joinRequest{}, 401, "revoked"},
		{"server of a revoked node", "POST", PathAnnounce, f.goneSrvKey, announceRequest{}, 401, "revoked"},
		{"sibling of a revoked server", "POST", PathAnnounce, f.s2Key, announceRequest{Services: game}, 200, ""},

		// A server speaks only for its own node.
		{"announce for another node", "POST", PathAnnounce, f.s1Key, announceRequest{NodeID: "fr-paris", Services: game}, 403, "wrong_node"},
		{"room report for another node", "POST", PathRooms, f.s1Key, roomRequest{NodeID: "fr-paris", RoomReport: RoomReport{RoomID: "r2"}, Seq: 1}, 403, "wrong_node"},
		{"announce naming its own node", "POST", PathAnnounce, f.s1Key, announceRequest{NodeID: "au-sydney", Services: game}, 200, ""},

		// Only the admin approves.
		{"no token cannot approve", "POST", approve, "", nil, 401, "unauthorized"},
		{"wrong token cannot approve", "POST", approve, "not-the-admin-token-at-all", nil, 401, "unauthorized"},
		{"admin approves", "POST", approve, adminToken, nil, 204, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.do(tt.method, tt.path, tt.key, tt.body)
			if res.Status != tt.status {
				t.Fatalf("status %d, want %d: %s", res.Status, tt.status, res.Body)
			}
			if tt.code != "" && res.code(t) != tt.code {
				t.Fatalf("code %q, want %q: %s", res.code(t), tt.code, res.Body)
			}
			if tt.status == 401 && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("401 without WWW-Authenticate: %v", res.Header)
			}
		})
	}
}

func TestStampedWithOwnNode(t *testing.T) {
	t.Parallel()
	f := newTrustFixture(t)
	// fr-paris has no fresh server; au's server tries to announce for it.
	res := f.do("POST", PathAnnounce, f.s1Key, announceRequest{NodeID: "fr-paris", Services: map[string]string{ServiceGame: "evil:1"}})
	if res.Status != http.StatusForbidden {
		t.Fatalf("announce for fr-paris: %d %s", res.Status, res.Body)
	}
	if got := regionNodes(f.regions()); len(got) != 0 {
		t.Fatalf("regions after a refused announce: %v", got)
	}
	// Without a node id the announce is stamped with the key's node.
	a := f.announce(f.s1Key, map[string]string{ServiceGame: "203.0.113.9:1"})
	if a.NodeID != "au-sydney" || a.ServerID != f.s1 {
		t.Fatalf("announcement %+v, want au-sydney/%s", a, f.s1)
	}
	if got := regionNodes(f.regions()); !slices.Equal(got, []string{"au-sydney"}) {
		t.Fatalf("regions %v, want [au-sydney]", got)
	}
	// A room reported by au is au's: fr's server cannot overwrite it.
	f.announce(f.frSrvKey, nil)
	f.do("POST", PathRooms, f.s1Key, roomRequest{RoomReport: RoomReport{RoomID: "shared", Members: []string{"a"}}, Seq: 1})
	res = f.do("POST", PathRooms, f.frSrvKey, roomRequest{RoomReport: RoomReport{RoomID: "shared", Members: []string{"x"}}, Seq: 99})
	if res.Status != http.StatusConflict || res.code(t) != "room_owned" {
		t.Fatalf("fr overwriting au's room: %d %s", res.Status, res.Body)
	}
	room, err := f.home.Room(context.Background(), "shared")
	if err != nil || room.NodeID != "au-sydney" || !slices.Equal(room.Members, []string{"a"}) {
		t.Fatalf("room %+v, %v", room, err)
	}
}

func TestRevokeServerLeavesSiblingsWorking(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{})
	key := e.createNode("au-sydney", "AU", true)
	s1, k1 := e.join(key)
	_, k2 := e.join(key)
	e.announce(k1, map[string]string{ServiceGame: "a:1"})
	e.announce(k2, map[string]string{ServiceGame: "b:1"})

	res := e.do("POST", PathAdmin+"/servers/"+s1+"/revoke", adminToken, nil)
	if res.Status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", res.Status, res.Body)
	}
	if res := e.do("POST", PathAnnounce, k1, announceRequest{}); res.Status != http.StatusUnauthorized {
		t.Fatalf("revoked server announces: %d", res.Status)
	}
	e.announce(k2, map[string]string{ServiceGame: "b:1"})
	list := e.regions()
	if len(list.Regions) != 1 || !slices.Equal(list.Regions[0].Services[ServiceGame], []string{"b:1"}) || list.Regions[0].Servers != 1 {
		t.Fatalf("regions after revoking one server: %+v", list.Regions)
	}
	// The node key still enrols a replacement.
	_, k3 := e.join(key)
	e.announce(k3, nil)
}

func TestOnlyAdminApproves(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{})
	key := e.createNode("au-sydney", "AU", false)
	_, sk := e.join(key)
	a := e.announce(sk, map[string]string{ServiceGame: "a:1"})
	if a.Approved {
		t.Fatal("a new node is approved")
	}
	for _, k := range []string{"", key, sk, "wrong-token-wrong-token"} {
		e.do("POST", PathAdmin+"/nodes/au-sydney/approve", k, nil)
	}
	if got := regionNodes(e.regions()); len(got) != 0 {
		t.Fatalf("unapproved node in regions: %v", got)
	}
	if res := e.do("POST", PathAdmin+"/nodes/au-sydney/approve", adminToken, nil); res.Status != http.StatusNoContent {
		t.Fatalf("admin approve: %d %s", res.Status, res.Body)
	}
	if got := regionNodes(e.regions()); !slices.Equal(got, []string{"au-sydney"}) {
		t.Fatalf("regions %v", got)
	}
	// Revoked is final.
	if err := e.home.RevokeNode(context.Background(), "au-sydney"); err != nil {
		t.Fatal(err)
	}
	if err := e.home.Approve(context.Background(), "au-sydney"); !errors.Is(err, ErrRevoked) {
		t.Fatalf("approve revoked: %v", err)
	}
	if got := regionNodes(e.regions()); len(got) != 0 {
		t.Fatalf("revoked node in regions: %v", got)
	}
}

func TestAdminAPIOff(t *testing.T) {
	t.Parallel()
	bpEnv := newEnv(t, HomeConfig{})
	home, err := NewHome(HomeConfig{}, bpEnv.bp, quiet())
	if err != nil {
		t.Fatal(err)
	}
	res := serve(t, home.Handler(), "GET", PathAdmin+"/nodes", "", nil, "192.0.2.1:1")
	if res.Status != http.StatusForbidden {
		t.Fatalf("admin API without a token configured: %d", res.Status)
	}
}

func TestAdminAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{})
	res := e.do("POST", PathAdmin+"/nodes", adminToken, NodeSpec{ID: "au-sydney", Name: "Sydney", Country: "au", Region: "Oceania"})
	if res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	var created createNodeResponse
	res.decode(t, &created)
	if created.Node.Country != "AU" || !validKeyFormat(created.Key, kindNode) || created.Node.Approved {
		t.Fatalf("created %+v", created)
	}
	if res := e.do("POST", PathAdmin+"/nodes", adminToken, NodeSpec{ID: "au-sydney", Country: "AU"}); res.Status != http.StatusConflict {
		t.Fatalf("create twice: %d", res.Status)
	}
	for _, p := range []string{"/nodes/nope/approve", "/nodes/nope/revoke", "/servers/nope/revoke", "/nodes/nope", "/rooms/nope"} {
		method := "POST"
		if !strings.HasSuffix(p, "revoke") && !strings.HasSuffix(p, "approve") {
			method = "GET"
		}
		if res := e.do(method, PathAdmin+p, adminToken, nil); res.Status != http.StatusNotFound {
			t.Fatalf("%s %s: %d", method, p, res.Status)
		}
	}
	sid, sk := e.join(created.Key)
	e.announce(sk, map[string]string{ServiceTURN: "203.0.113.9:3478"})
	e.do("POST", PathAdmin+"/nodes/au-sydney/approve", adminToken, nil)
	res = e.do("GET", PathAdmin+"/nodes/au-sydney", adminToken, nil)
	var n NodeInfo
	res.decode(t, &n)
	if !n.Approved || !n.InRotation || len(n.Servers) != 1 || n.Servers[0].ID != sid || !n.Servers[0].Fresh {
		t.Fatalf("node %+v", n)
	}
}

// TestKeysStoredHashed: no key appears anywhere in the register.
func TestKeysStoredHashed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{})
	nodeKey, serverKey := e.sydney()
	e.announce(serverKey, nil)
	ctx := context.Background()
	for _, coll := range []string{collNodes, collServers, collKeys, collPresence, collSelfTests} {
		recs, err := e.bp.Records(ctx, coll)
		if err != nil {
			t.Fatal(err)
		}
		for id, data := range recs {
			for _, k := range []string{nodeKey, serverKey, nodeKey[4:], serverKey[4:]} {
				if strings.Contains(id, k) || strings.Contains(string(data), k) {
					t.Fatalf("%s/%s holds a key", coll, id)
				}
			}
		}
	}
}

func TestRequestValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{MaxBody: 4096})
	nodeKey, sk := e.sydney()
	tests := []struct {
		name   string
		path   string
		key    string
		body   any
		status int
	}{
		{"malformed JSON", PathAnnounce, sk, `{"services":`, 400},
		{"wrong type", PathAnnounce, sk, `{"services":["a"]}`, 400},
		{"two values", PathAnnounce, sk, `{} {}`, 400},
		{"body over the limit", PathAnnounce, sk, `{"services":{"game":"` + strings.Repeat("a", 5000) + `"}}`, 413},
		{"bad service name", PathAnnounce, sk, announceRequest{Services: map[string]string{"Game!": "a:1"}}, 400},
		{"address with a space", PathAnnounce, sk, announceRequest{Services: map[string]string{"game": "a 1"}}, 400},
		{"too many services", PathAnnounce, sk, announceRequest{Services: manyServices(17)}, 400},
		{"control character in hardware", PathAnnounce, sk, announceRequest{Hardware: Hardware{OS: "linux\x00"}}, 400},
		{"room without id", PathRooms, sk, roomRequest{Seq: 1}, 400},
		{"closed room with members", PathRooms, sk, roomRequest{RoomReport: RoomReport{RoomID: "r", Closed: true, Members: []string{"a"}}, Seq: 1}, 400},
		{"empty member id", PathRooms, sk, roomRequest{RoomReport: RoomReport{RoomID: "r", Members: []string{""}}, Seq: 1}, 400},
		{"join name too long", PathJoin, nodeKey, joinRequest{Name: strings.Repeat("n", 65)}, 400},
		{"empty self-test", PathSelfTest, sk, "", 400},
		{"self-test too large", PathSelfTest, sk, make([]byte, DefaultSelfTestBytes+1), 413},
		{"node id with capitals", PathAdmin + "/nodes", adminToken, NodeSpec{ID: "AU", Country: "AU"}, 400},
		{"country not ISO", PathAdmin + "/nodes", adminToken, NodeSpec{ID: "au", Country: "Australia"}, 400},
		{"empty join body is fine", PathJoin, nodeKey, "", 201},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.do("POST", tt.path, tt.key, tt.body)
			if res.Status != tt.status {
				t.Fatalf("status %d, want %d: %s", res.Status, tt.status, res.Body)
			}
			if res.Status >= 400 {
				var eb errorBody
				res.decode(t, &eb)
				if eb.Error == "" || eb.Code == "" {
					t.Fatalf("error body %s", res.Body)
				}
			}
		})
	}
}

func manyServices(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m["s"+string(rune('a'+i))] = "a:1"
	}
	return m
}

// noCounters is a backplane without Increment.
type noCounters struct{ backplane.Backplane }

func (noCounters) Increment(context.Context, string, time.Duration, int64) (int64, error) {
	return 0, backplane.ErrUnsupported
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	for _, counters := range []bool{true, false} {
		name := "backplane counters"
		if !counters {
			name = "memory fallback"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, HomeConfig{Limits: RateLimits{Announce: 3, Join: 2, PerIP: 20}})
			if !counters {
				e = newEnvOn(t, HomeConfig{Limits: RateLimits{Announce: 3, Join: 2, PerIP: 20}}, noCounters{e.bp}, e.clock)
			}
			nodeKey, k1 := e.sydney()
			_, k2 := e.join(nodeKey)
			if res := e.do("POST", PathJoin, nodeKey, nil); res.Status != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
				t.Fatalf("third join in a window: %d", res.Status)
			}
			for range 3 {
				e.announce(k1, nil)
			}
			if res := e.do("POST", PathAnnounce, k1, nil); res.Status != http.StatusTooManyRequests {
				t.Fatalf("fourth announce in a window: %d", res.Status)
			}
			e.announce(k2, nil) // per key: the sibling is not limited
			e.clock.Advance(time.Minute)
			e.announce(k1, nil)

			// Per address, before the key is looked at.
			limited := 0
			for range 25 {
				res := serve(t, e.h, "POST", PathAnnounce, newKey(kindServer), nil, "192.0.2.99:5")
				if res.Status == http.StatusTooManyRequests {
					limited++
				}
			}
			if limited != 5 {
				t.Fatalf("%d of 25 requests from one address limited, want 5", limited)
			}
		})
	}
}
