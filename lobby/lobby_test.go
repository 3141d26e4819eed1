package lobby

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/room"
)

const tick = 250 * time.Millisecond // Config.Tick's default

// A code made on A and typed on B and C lands all three on A, with the
// right host.
func TestCodeWorksEverywhere(t *testing.T) {
	withCluster(t, clusterOpts{servers: 3, run: true}, func(t *testing.T, c *cluster) {
		a, b, cc := c.nodes[0], c.nodes[1], c.nodes[2]
		code := c.create(a, "host")

		c.connect(b, "bea")
		c.connect(cc, "cid")
		ctx := t.Context()
		b.lm.join(ctx, "bea", strings.ToLower(code), time.Now()) // typed as it came
		cc.lm.join(ctx, "cid", " "+code+" ", time.Now())
		time.Sleep(cooldown) // they just connected: the host moves nobody sooner
		synctest.Wait()

		for _, id := range []string{"bea", "cid"} {
			if got := c.Where(id); got != a.Srv.ID() {
				t.Fatalf("%s is on %s, want %s", id, got, a.Srv.ID())
			}
		}
		st, ok := a.lm.Lobby(code)
		if len(st.Members) == 3 && st.Members[1] == "cid" { // they arrived at once, through two servers
			st.Members[1], st.Members[2] = st.Members[2], st.Members[1]
		}
		if !ok || st.Host != "host" || !reflect.DeepEqual(st.Members, []string{"host", "bea", "cid"}) {
			t.Fatalf("lobby on %s: %+v, want host, bea, cid with host as host", a.Srv.ID(), st)
		}
		for _, id := range []string{"host", "bea", "cid"} {
			p, _ := c.last(id, TypeState).(StatePacket)
			if p.Code != code || p.Host != "host" || len(p.Members) != 3 || p.Node != a.Srv.ID() {
				t.Errorf("%s was last told %+v", id, p)
			}
		}
		for _, m := range c.allMoves() {
			if m.reason != room.ReasonLobby || m.ho.Code != code || m.ho.Role != RoleMember || m.to != a.Srv.ID() {
				t.Errorf("move %+v, want a lobby move to %s as a member", m, a.Srv.ID())
			}
		}

		// Codes that name no lobby are refused where they are typed.
		for _, tc := range []struct{ code string }{{"ZZZZZ"}, {"O0I1"}, {"AB"}} {
			c.connect(b, "dan")
			b.lm.join(ctx, "dan", tc.code, time.Now())
			p, _ := c.last("dan", TypeError).(ErrorPacket)
			want := ErrNoLobby
			if _, ok := NormalizeCode(tc.code); !ok {
				want = ErrBadCode
			}
			if p.Error != want.Error() || c.Where("dan") != b.Srv.ID() {
				t.Errorf("join %q: told %+v, at %s; want %v on %s", tc.code, p, c.Where("dan"), want, b.Srv.ID())
			}
		}
	})
}

// 32 racing creations on three servers never yield one code twice, even
// when the candidate codes collide.
func TestRacingCreationsUniqueCodes(t *testing.T) {
	withCluster(t, clusterOpts{servers: 3}, func(t *testing.T, c *cluster) {
		var draws atomic.Int64
		gen := func() string { // every candidate comes twice, in turn
			k := draws.Add(1) / 2 % 40
			return string([]byte{Alphabet[k/32], Alphabet[k%32], 'Z', 'Z'})
		}
		for _, n := range c.nodes {
			n.lm.gen, n.lm.attempts = gen, 100
		}
		var wg sync.WaitGroup
		codes := make([]string, 32)
		for i := range codes {
			n, id := c.nodes[i%3], fmt.Sprintf("p%02d", i)
			c.connect(n, id)
			wg.Go(func() {
				n.lm.create(t.Context(), id, time.Now())
				codes[i] = n.lm.LobbyOf(id)
			})
		}
		wg.Wait()
		seen := map[string]string{}
		for i, code := range codes {
			n := c.nodes[i%3]
			if code == "" {
				t.Fatalf("p%02d got no code", i)
			}
			if other, dup := seen[code]; dup {
				t.Fatalf("code %s given to p%02d and %s", code, i, other)
			}
			seen[code] = fmt.Sprintf("p%02d", i)
			where, err := c.nodes[(i+1)%3].Srv.Locate(t.Context(), fleet.KindLobby, code)
			if err != nil || where.ID != n.Srv.ID() {
				t.Fatalf("%s locates at %v (%v), want %s", code, where.ID, err, n.Srv.ID())
			}
		}
		if draws.Load() <= 32 {
			t.Fatalf("only %d candidates drawn: the codes did not collide", draws.Load())
		}
	})
}

// The host leaves: a new host. The last member leaves: the lobby closes
// and its code is released.
func TestNewHostWhenHostLeaves(t *testing.T) {
	withCluster(t, clusterOpts{servers: 2}, func(t *testing.T, c *cluster) {
		a := c.nodes[0]
		ctx := t.Context()
		code := c.create(a, "host")
		for _, id := range []string{"bea", "cid"} {
			c.connect(a, id)
			a.lm.join(ctx, id, code, time.Now())
		}

		a.lm.leave(ctx, "host")
		if p, _ := c.last("host", TypeLeft).(LeftPacket); p.Code != code {
			t.Errorf("the host was told %+v on leaving", p)
		}
		for _, id := range []string{"bea", "cid"} {
			if p, _ := c.last(id, TypeState).(StatePacket); p.Host != "bea" || len(p.Members) != 2 {
				t.Errorf("%s was told %+v, want bea as host of two", id, p)
			}
		}

		// The new host's connection ends: the next member hosts.
		c.Disconnect("bea")
		a.lm.disconnected("bea")
		if st, _ := a.lm.Lobby(code); st.Host != "cid" || len(st.Members) != 1 {
			t.Fatalf("after bea's connection ended: %+v, want cid alone as host", st)
		}
		a.lm.start(ctx, "bea")
		a.lm.leave(ctx, "cid")
		if a.lm.Lobbies() != 0 {
			t.Fatal("the empty lobby is still open")
		}
		synctest.Wait() // the fleet writes the queued release
		if _, err := c.nodes[1].Srv.Locate(ctx, fleet.KindLobby, code); !errors.Is(err, fleet.ErrNotFound) {
			t.Fatalf("the closed lobby's code still locates: %v", err)
		}
	})
}

// Members of a lobby whose match runs stay when their connection ends and
// are dropped when the match ends; the lobby is then open again.
func TestMatchAndAwayMembers(t *testing.T) {
	withCluster(t, clusterOpts{servers: 1, run: true, matchLen: 60}, func(t *testing.T, c *cluster) {
		a := c.nodes[0]
		ctx := t.Context()
		code := c.create(a, "host")
		c.connect(a, "bea")
		a.lm.join(ctx, "bea", code, time.Now())

		a.lm.start(ctx, "bea")
		if p, _ := c.last("bea", TypeError).(ErrorPacket); p.Error != ErrNotHost.Error() {
			t.Fatalf("a member started the match: %+v", p)
		}
		a.lm.start(ctx, "host")
		st, _ := a.lm.Lobby(code)
		if !st.Playing || a.Host.RoomOf("bea") != st.Room {
			t.Fatalf("after start: %+v; bea in room %q", st, a.Host.RoomOf("bea"))
		}
		c.Disconnect("host")
		a.lm.disconnected("host")
		if st, _ := a.lm.Lobby(code); len(st.Members) != 2 {
			t.Fatalf("a member away during the match was dropped: %+v", st)
		}
		time.Sleep(2 * time.Second) // the match ends
		synctest.Wait()
		st, _ = a.lm.Lobby(code)
		if st.Playing || st.Host != "bea" || !reflect.DeepEqual(st.Members, []string{"bea"}) {
			t.Fatalf("after the match: %+v, want bea alone, host, not playing", st)
		}
	})
}

func TestNormalizeCode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"K7QXM", "K7QXM", true},
		{" k7qxm\n", "K7QXM", true},
		{"ABCD", "ABCD", true},
		{"ABCDEF", "ABCDEF", true},
		{"ABC", "", false},
		{"ABCDEFG", "", false},
		{"AB0D", "", false},
		{"ABOD", "", false},
		{"AB1D", "", false},
		{"ABID", "", false},
		{"AB-D", "", false},
	}
	for _, tc := range cases {
		if got, ok := NormalizeCode(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("NormalizeCode(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	for range 1000 {
		code := newCode(6)
		if got, ok := NormalizeCode(code); !ok || got != code {
			t.Fatalf("new code %q does not normalize to itself", code)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{CodeLength: 3}, {CodeLength: 7}, {MaxMembers: -1}, {MaxMembers: MaxMembersLimit + 1}, {Tick: -1}, {ArrivalTimeout: -1}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
}

// Every configuration New refuses is an ErrConfig.
func TestNewConfigErrors(t *testing.T) {
	for _, cfg := range []Config{{CodeLength: 9}, {MaxMembers: -1}, {Tick: -1}, {ArrivalTimeout: -1}} {
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v): %v, want an ErrConfig", cfg, err)
		}
	}
}

// Members who join at once are each told last of the lobby with everyone
// in it: a lobby's states go out in the order they were taken, so one
// taken before the last join cannot overtake one taken after it.
func TestJoinsAtOnceEndWithEveryone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { joinsAtOnce(t) })
}

func joinsAtOnce(t *testing.T) {
	c := startCluster(t, clusterOpts{servers: 1})
	a := c.nodes[0]
	for round := range 100 {
		host := fmt.Sprintf("host-%d", round)
		code := c.create(a, host)
		ids := append([]string{host}, c.guests(a, fmt.Sprintf("m-%d", round), 7)...)
		var wg sync.WaitGroup
		for _, id := range ids[1:] {
			wg.Go(func() { a.lm.join(t.Context(), id, code, time.Now()) })
		}
		wg.Wait()
		for _, id := range ids {
			if p, _ := c.last(id, TypeState).(StatePacket); len(p.Members) != len(ids) {
				t.Fatalf("round %d: %s was last told members %v, want all %d", round, id, p.Members, len(ids))
			}
		}
	}
}
