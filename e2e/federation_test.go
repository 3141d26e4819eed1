package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/internal/testkit/fedtest"
	"github.com/muster-gg/muster/internal/testkit/fleetproc"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// seedAnnounce is the announce body exactly as the federation seed shows
// it; the AU node's agent announces these services with its own
// addresses in place of 203.0.113.9's.
const seedAnnounce = `{"services":{"photon":"203.0.113.9:22002","turn":"203.0.113.9:3478","stun":"203.0.113.9:3478"}}`

// TestDuelServerFederated is issue 22's acceptance with real processes:
// home on a real Redis; two regional nodes, each a muster-node agent and
// a duel server (its own process, wired to home by MUSTER__FEDERATION__
// variables only) on a loopback address of its own, with a coturn each.
// The AU node's agent announces the seed's body (photon, turn, stun); the
// JP duel announces its own game address and its agent the relays.
//
// A player from Australia creates a room: it is placed on the AU node and
// the player enters it on that node's duel with home's token alone (the
// room opens there with home's id); a friend from Japan joins the room
// there with a token of their own, not on the JP node, and they play
// through the AU duel, whose room reaches home's register under home's id. TURN credentials home mints are
// accepted by each node's coturn. A home token is good once. Revoking the
// AU agent's server stops that agent and takes only it out: AU rooms and
// relays go home, the AU duel's room stays in the register, and the JP
// node goes on getting rooms, played on its duel.
func TestDuelServerFederated(t *testing.T) {
	for _, bin := range []string{"go", "redis-server", "turnserver", "turnutils_uclient"} {
		testbin.Need(t, bin) // skip before building anything
	}
	fleetproc.TakeTurn(t)
	home := fedtest.StartHome(t)
	duelBin := buildDuel(t)
	nodeBin := fedtest.BuildMusterNode(t, t.TempDir())
	const turnSecret = "turn-shared-secret-0123456789"
	turnAU := testbin.StartCoturn(t, turnSecret)
	turnJP := testbin.StartCoturn(t, turnSecret)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// duel starts a duel server of node on host, wired to home by
	// configuration only; with announce it announces its own game address
	// (the "game" service). It returns the server's host:port.
	const secret = "game-token-secret-0123456789"
	duel := func(node, nodeKey, host string, announce bool) string {
		t.Helper()
		port := strconv.Itoa(testbin.FreePort(t, host))
		env := []string{
			"MUSTER__SERVER__HTTP__HOST=" + host,
			"MUSTER__SERVER__HTTP__PORT=" + port,
			"MUSTER__SERVER__DRAIN__TIMEOUT=1",
			"MUSTER__FEDERATION__HOME_URL=" + home.URL,
			"MUSTER__FEDERATION__NODE_ID=" + node,
			"MUSTER__FEDERATION__TOKEN_SECRET=" + secret,
			"MUSTER__FEDERATION__KEY_FILE=" + t.TempDir() + "/duel-key",
			"MUSTER__FEDERATION__NODE_KEY=" + nodeKey,
			"MUSTER__FEDERATION__ANNOUNCE_EVERY=" + fedtest.AnnounceEvery.String(),
		}
		addr := net.JoinHostPort(host, port)
		if announce {
			env = append(env, "MUSTER__FEDERATION__GAME_ADDRESS="+playURL(addr))
		}
		fedtest.Start(t, "duel "+node, duelBin, env)
		// The AU agent announces this address for the duel: on a busy
		// machine it did before the duel listened, and a player sent
		// there was refused.
		if err := testbin.WaitDial(addr, time.Minute); err != nil {
			t.Fatalf("duel %s at %s: %v", node, addr, err)
		}
		return addr
	}
	// agent starts the muster-node agent of node announcing services.
	agent := func(node, nodeKey string, services map[string]string) *fedtest.Proc {
		t.Helper()
		args := []string{"-home", home.URL, "-key-file", t.TempDir() + "/agent-key", "-announce-every", fedtest.AnnounceEvery.String()}
		for _, name := range slices.Sorted(maps.Keys(services)) {
			args = append(args, "-service", name+"="+services[name])
		}
		return fedtest.Start(t, "muster-node "+node, nodeBin, []string{"MUSTER_NODE_NODE_KEY=" + nodeKey}, args...)
	}

	// au-sydney on 127.0.0.2: the agent announces the seed's body.
	auKey := home.ApprovedNode(t, "au-sydney", "AU")
	auGame := duel("au-sydney", auKey, "127.0.0.2", false)
	var seed struct{ Services map[string]string }
	body := strings.NewReplacer("203.0.113.9:22002", auGame, "203.0.113.9:3478", turnAU.Addr).Replace(seedAnnounce)
	if err := json.Unmarshal([]byte(body), &seed); err != nil {
		t.Fatal(err)
	}
	auAgent := agent("au-sydney", auKey, seed.Services)
	// jp-tokyo on 127.0.0.3: the duel announces its game address.
	jpKey := home.ApprovedNode(t, "jp-tokyo", "JP")
	jpGame := playURL(duel("jp-tokyo", jpKey, "127.0.0.3", true))
	agent("jp-tokyo", jpKey, map[string]string{federation.ServiceTURN: turnJP.Addr, federation.ServiceSTUN: turnJP.Addr})

	// Home's matchmaking: a placer and the players' countries.
	countries := map[string]string{"alice": "AU", "bob": "JP", "carol": "JP", "dave": "AU"}
	homeGame := "ws://127.0.0.1:1/play" // home's own game server: never reached here
	placer := fedtest.StartPlacer(t, federation.PlacerConfig{
		HomeURL: home.URL, TURNSecret: turnSecret,
		HomeServices: map[string]string{federation.ServiceGame: homeGame, federation.ServiceTURN: "127.0.0.1:9"},
		Resolver: federation.CountryResolverFunc(func(_ context.Context, player, _ string) (string, error) {
			return countries[player], nil
		}),
	})
	for player := range countries {
		placer.SignIn(player, "")
	}
	region := func(node string) federation.Region {
		for _, r := range placer.Regions() {
			if r.Node == node {
				return r
			}
		}
		return federation.Region{}
	}
	fedtest.WaitFor(t, "both nodes in the placer's regions with their services", func() bool {
		au, jp := region("au-sydney").Services, region("jp-tokyo").Services
		return slices.Equal(au[federation.ServicePhoton], []string{auGame}) && slices.Equal(au[federation.ServiceTURN], []string{turnAU.Addr}) &&
			slices.Equal(jp[federation.ServiceGame], []string{jpGame}) && slices.Equal(jp[federation.ServiceTURN], []string{turnJP.Addr})
	})
	fedtest.WaitFor(t, "the players' countries", func() bool {
		for player, c := range countries {
			if placer.Country(player) != c {
				return false
			}
		}
		return true
	})

	// alice (AU) creates a room: it is placed on the AU node's duel.
	au := placer.PlaceFor(federation.RoomInfo{ID: "room-au"}, "alice")
	if au != (federation.Placement{Node: "au-sydney", Address: auGame}) {
		t.Fatalf("alice's new room is placed at %+v, want au-sydney's duel %s", au, auGame)
	}
	// bob (JP) would get a room of his own on the JP node, but joining
	// alice's he is sent to it, on the AU node.
	if own := placer.PlaceFor(federation.RoomInfo{ID: "room-au"}, "bob"); own.Node != "jp-tokyo" {
		t.Fatalf("a new room of bob's is placed at %+v, want jp-tokyo", own)
	}
	if got := placer.PlaceFor(federation.RoomInfo{ID: "room-au", Members: 1, Placement: au}, "bob"); got != au {
		t.Fatalf("bob joining alice's room is sent to %+v, want %+v", got, au)
	}
	tickets := map[string]string{}
	auRoom := playHomeRoom(t, au, "room-au", secret, "alice", "bob", tickets)
	fedtest.WaitFor(t, "the AU duel's room in home's register under home's id", func() bool {
		r, err := home.Room(ctx, auRoom)
		return err == nil && r.NodeID == "au-sydney" && r.Properties["kind"] == federation.KindHomeRoom &&
			slices.Equal(slices.Sorted(slices.Values(r.Members)), []string{"alice", "bob"})
	})

	// A home token is good once.
	if _, m, err := playtest.Join(t, playURL(au.Address)+"?ticket="+tickets["alice"]); websocket.CloseStatus(err) != 4001 {
		t.Errorf("a reused home token: %v %v, want close 4001", m, err)
	}

	// Each player's relay is their node's coturn, and it accepts the
	// credentials home minted (both allocations at once: each takes
	// seconds).
	var wg sync.WaitGroup
	errs := map[string]chan error{}
	for player, turn := range map[string]*testbin.Coturn{"alice": turnAU, "bob": turnJP} {
		ice := placer.ICEServers(placer.Country(player), player)
		if len(ice) != 2 || !slices.Equal(ice[0].URLs, []string{"stun:" + turn.Addr}) || !slices.Equal(ice[1].URLs, []string{"turn:" + turn.Addr}) {
			t.Fatalf("%s's ICE servers %+v, want their node's coturn %s", player, ice, turn.Addr)
		}
		errc := make(chan error, 1)
		errs[player] = errc
		wg.Go(func() { errc <- turn.Allocate(ctx, t, ice[1].Username, ice[1].Credential) })
	}
	wg.Wait()
	for player, turn := range map[string]*testbin.Coturn{"alice": turnAU, "bob": turnJP} {
		if err := <-errs[player]; err != nil {
			t.Fatalf("coturn %s refused home's credentials for %s: %v\n%s", turn.Addr, player, err, turn.Log())
		}
	}

	// Revoking the AU agent's server stops the agent (status 3) and takes
	// only that server out: AU rooms and relays go home; the AU duel (a
	// server of its own) keeps its room in the register.
	info, err := home.Node(ctx, "au-sydney")
	if err != nil {
		t.Fatal(err)
	}
	revoked := ""
	for _, s := range info.Servers {
		if s.Services[federation.ServicePhoton] != "" {
			revoked = s.ID
		}
	}
	if len(info.Servers) != 2 || revoked == "" {
		t.Fatalf("au-sydney's servers %+v, want the duel and the agent", info.Servers)
	}
	home.RevokeAgent(t, revoked, auAgent)
	fedtest.WaitFor(t, "the AU agent's services out of the placer's regions", func() bool {
		s := region("au-sydney").Services
		return len(s[federation.ServicePhoton]) == 0 && len(s[federation.ServiceTURN]) == 0 && len(region("jp-tokyo").Services[federation.ServiceGame]) == 1
	})
	if got := placer.PlaceFor(federation.RoomInfo{ID: "room-au-2"}, "dave"); got != (federation.Placement{Address: homeGame}) {
		t.Fatalf("an AU room after the revocation is placed at %+v, want home", got)
	}
	if ice := placer.ICEServers("AU", "dave"); len(ice) != 1 || !slices.Equal(ice[0].URLs, []string{"turn:127.0.0.1:9"}) {
		t.Fatalf("an AU player's ICE servers after the revocation: %+v, want home's", ice)
	}
	if r, err := home.Room(ctx, auRoom); err != nil || r.NodeID != "au-sydney" {
		t.Fatalf("the AU duel's room after its agent's revocation: %+v %v", r, err)
	}

	// The JP node goes on getting rooms: carol (JP) creates one, placed
	// on the JP duel, and dave (AU) joins it there.
	jp := placer.PlaceFor(federation.RoomInfo{ID: "room-jp"}, "carol")
	if jp != (federation.Placement{Node: "jp-tokyo", Address: jpGame}) {
		t.Fatalf("carol's new room is placed at %+v, want jp-tokyo's duel %s", jp, jpGame)
	}
	if got := placer.PlaceFor(federation.RoomInfo{ID: "room-jp", Members: 1, Placement: jp}, "dave"); got != jp {
		t.Fatalf("dave joining carol's room is sent to %+v, want %+v", got, jp)
	}
	jpRoom := playHomeRoom(t, jp, "room-jp", secret, "carol", "dave", tickets)
	fedtest.WaitFor(t, "the JP duel's room in home's register", func() bool {
		r, err := home.Room(ctx, jpRoom)
		return err == nil && r.NodeID == "jp-tokyo" && slices.Equal(slices.Sorted(slices.Values(r.Members)), []string{"carol", "dave"})
	})
}

// playURL is the WebSocket URL of a Muster game server at addr: a
// placement's address as announced (ws://host:port/play), or host:port
// as a photon service names it.
func playURL(addr string) string {
	if strings.Contains(addr, "://") {
		return addr
	}
	return "ws://" + addr + "/play"
}

// playHomeRoom plays home's room on p's game server with home's tokens
// alone: creator enters with a token home minted for the room on p's node
// and is seated in it (the room opened with home's id), friend enters
// with one of their own and is seated in the same room; the friend sees
// the creator move in it. No lobby code is typed. It records the tickets
// and returns the room's id.
func playHomeRoom(t *testing.T, p federation.Placement, room, secret, creator, friend string, tickets map[string]string) string {
	t.Helper()
	conns := map[string]*playtest.Conn{}
	for _, player := range []string{creator, friend} {
		tickets[player] = fedtest.Mint(t, secret, player, room, p.Node)
		c, m, err := playtest.Join(t, playURL(p.Address)+"?ticket="+tickets[player])
		if err != nil || m["type"] != "welcome" || m["player"] != player {
			t.Fatalf("%s entering %s with a home token: %v %v", player, p.Address, m, err)
		}
		if got := c.Next("room"); got["room"] != room || got["kind"] != federation.KindHomeRoom {
			t.Fatalf("%s with a home token for %s is in %v", player, room, got)
		}
		conns[player] = c
	}
	// The creator moves right; the friend sees it in the room's state.
	conns[creator].Send("input", map[string]float64{"dx": 1})
	conns[friend].NextWhere(creator+" moving, as "+friend+" sees it", func(m map[string]any) bool {
		players, _ := m["players"].([]any)
		for _, pl := range players {
			f, _ := pl.(map[string]any)
			if x, _ := f["X"].(float64); f["ID"] == creator && x > 250 {
				return true
			}
		}
		return false
	})
	return room
}
