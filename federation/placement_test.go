package federation

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// placementEnv: au (game and TURN), nz (TURN only), jp (game, not
// approved), de (game, approved, silent).
func placementEnv(t *testing.T) (*env, *Placer) {
	t.Helper()
	e := newEnv(t, HomeConfig{})
	add := func(id, country string, approve bool, services map[string]string) string {
		return e.inRotation(e.createNode(id, country, approve), services)
	}
	add("de-berlin", "DE", true, map[string]string{ServiceGame: "de:1"})
	e.clock.Advance(3 * time.Minute)
	add("au-sydney", "AU", true, map[string]string{ServiceGame: "au:1", ServiceTURN: "au:3478", ServiceSTUN: "au:3478"})
	add("nz-auckland", "NZ", true, map[string]string{ServiceTURN: "turn:nz:3478"})
	add("jp-tokyo", "JP", false, map[string]string{ServiceGame: "jp:1"})
	p := newPlacerFor(t, e, PlacerConfig{TURNSecret: "turn-secret"})
	p.step(context.Background(), e.clock.Now())
	return e, p
}

func TestPlace(t *testing.T) {
	t.Parallel()
	_, p := placementEnv(t)
	home := Placement{Address: "home.example:443"}
	au := Placement{Node: "au-sydney", Address: "au:1"}
	tests := []struct {
		name    string
		room    RoomInfo
		country string
		want    Placement
	}{
		{"empty room by an AU player goes to the AU node", RoomInfo{ID: "r"}, "AU", au},
		{"country in lower case", RoomInfo{ID: "r"}, "au", au},
		{"a room with people stays on its node", RoomInfo{ID: "r", Members: 1, Placement: au}, "FR", au},
		{"a room with people stays at home", RoomInfo{ID: "r", Members: 3}, "AU", home},
		{"unknown country goes home", RoomInfo{ID: "r"}, "", home},
		{"malformed country goes home", RoomInfo{ID: "r"}, "Australia", home},
		{"country without a node goes home", RoomInfo{ID: "r"}, "FR", home},
		{"TURN-only node: rooms at home", RoomInfo{ID: "r"}, "NZ", home},
		{"unapproved node: rooms at home", RoomInfo{ID: "r"}, "JP", home},
		{"silent node: rooms at home", RoomInfo{ID: "r"}, "DE", home},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Place(tt.room, tt.country); got != tt.want {
				t.Fatalf("Place = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPlaceSpreadsOverServers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{})
	key := e.createNode("au-sydney", "AU", true)
	for _, addr := range []string{"a:1", "b:1", "c:1"} {
		e.inRotation(key, map[string]string{ServiceGame: addr})
	}
	p := newPlacerFor(t, e, PlacerConfig{})
	p.step(context.Background(), e.clock.Now())
	seen := map[string]bool{}
	for _, id := range []string{"r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12"} {
		got := p.Place(RoomInfo{ID: id}, "AU")
		if again := p.Place(RoomInfo{ID: id}, "AU"); again != got {
			t.Fatalf("room %s placed on %v then %v", id, got, again)
		}
		seen[got.Address] = true
	}
	if len(seen) < 2 {
		t.Fatalf("twelve rooms all on %v", seen)
	}
}

func TestICEServers(t *testing.T) {
	t.Parallel()
	e, p := placementEnv(t)
	expiry := e.clock.Now().Add(DefaultTURNTTL).Unix()
	tests := []struct {
		name       string
		country    string
		stun, turn []string
	}{
		{"AU player gets the AU node's relays", "AU", []string{"stun:au:3478"}, []string{"turn:au:3478"}},
		{"TURN-only node: node's TURN, home's STUN", "NZ", []string{"stun:home.example:3478"}, []string{"turn:nz:3478"}},
		{"no TURN node: home's", "FR", []string{"stun:home.example:3478"}, []string{"turn:home.example:3478"}},
		{"unknown country: home's", "", []string{"stun:home.example:3478"}, []string{"turn:home.example:3478"}},
		{"unapproved node: home's", "JP", []string{"stun:home.example:3478"}, []string{"turn:home.example:3478"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := p.ICEServers(tt.country, "p1")
			if len(got) != 2 || !slices.Equal(got[0].URLs, tt.stun) || !slices.Equal(got[1].URLs, tt.turn) {
				t.Fatalf("ICEServers = %+v", got)
			}
			user, pass := TURNCredentials("turn-secret", "p1", DefaultTURNTTL, e.clock.Now())
			if got[1].Username != user || got[1].Credential != pass || user != strconv.FormatInt(expiry, 10)+":p1" {
				t.Fatalf("credentials %q %q, want %q %q", got[1].Username, got[1].Credential, user, pass)
			}
			if got[0].Username != "" {
				t.Fatalf("STUN entry with credentials: %+v", got[0])
			}
		})
	}
}

// TestCountryLookedUpAtSignIn runs the Placer in a synctest bubble: the
// lookup happens in the background, a slow one never delays placing, and
// a failed one means home.
func TestCountryLookedUpAtSignIn(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e, _ := placementEnv(t)
		release := make(chan struct{})
		resolver := CountryResolverFunc(func(ctx context.Context, playerID, ip string) (string, error) {
			switch playerID {
			case "slow":
				select {
				case <-release:
				case <-ctx.Done():
					return "", ctx.Err()
				}
				return "AU", nil
			case "broken":
				return "", errors.New("lookup service down")
			case "nowhere":
				return "??", nil
			}
			if ip == "203.0.113.5" {
				return "au", nil
			}
			return "FR", nil
		})
		p := newPlacerFor(t, e, PlacerConfig{Resolver: resolver, PollEvery: 6 * time.Hour})
		p.cfg.Now = time.Now // the bubble's clock, for lookups and TTLs
		run := testrun.Start(t, p.Run)

		p.SignIn("alice", "203.0.113.5")
		p.SignIn("bob", "198.51.100.1")
		p.SignIn("slow", "203.0.113.6")
		p.SignIn("broken", "203.0.113.7")
		p.SignIn("nowhere", "203.0.113.8")
		synctest.Wait()

		want := map[string]string{"alice": "AU", "bob": "FR", "slow": "", "broken": "", "nowhere": ""}
		for id, c := range want {
			if got := p.Country(id); got != c {
				t.Errorf("Country(%s) = %q, want %q", id, got, c)
			}
		}
		if got := p.PlaceFor(RoomInfo{ID: "r"}, "alice"); got.Node != "au-sydney" {
			t.Errorf("alice's room: %+v", got)
		}
		if got := p.PlaceFor(RoomInfo{ID: "r"}, "slow"); !got.Home() {
			t.Errorf("room of a player still being looked up: %+v", got)
		}
		close(release)
		synctest.Wait()
		if got := p.Country("slow"); got != "AU" {
			t.Errorf("slow lookup finished with %q", got)
		}
		p.SignOut("alice")
		if got := p.Country("alice"); got != "" {
			t.Errorf("after sign-out: %q", got)
		}
		time.Sleep(DefaultCountryTTL)
		if got := p.Country("bob"); got != "" {
			t.Errorf("after CountryTTL: %q", got)
		}
		run.End(t)
	})
}

func TestPlacerRunTwice(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HomeConfig{})
		p := newPlacerFor(t, e, PlacerConfig{})
		run := testrun.Start(t, p.Run)
		synctest.Wait()
		if err := p.Run(run.Context()); !errors.Is(err, ErrRunning) {
			t.Fatalf("second Run: %v", err)
		}
		run.End(t)
	})
}
