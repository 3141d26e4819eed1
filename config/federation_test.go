package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/config"
)

// TestFederationConfig: muster.federation is off by default, set from
// MUSTER__FEDERATION__ variables, and a bad setting names its key and
// variable without echoing a secret.
func TestFederationConfig(t *testing.T) {
	t.Parallel()
	const secret = "token-secret-0123456789"
	const nodeKey = "mfn_node-key-that-must-not-show"
	good := []string{
		"MUSTER__FEDERATION__HOME_URL=http://127.0.0.1:9000",
		"MUSTER__FEDERATION__NODE_ID=au-sydney",
		"MUSTER__FEDERATION__TOKEN_SECRET=" + secret,
		"MUSTER__FEDERATION__KEY_FILE=/var/lib/muster/key",
		"MUSTER__FEDERATION__NODE_KEY=" + nodeKey,
		"MUSTER__FEDERATION__GAME_ADDRESS=ws://127.0.0.2:8080/play",
		"MUSTER__FEDERATION__ANNOUNCE_EVERY=200ms",
		"MUSTER__FEDERATION__ROLE=game",
	}
	if d := defaults(t); d.Federation.HomeURL != "" || d.Federation.AnnounceEvery != config.Duration(time.Minute) {
		t.Fatalf("default federation %+v", d.Federation)
	}
	c := defaults(t)
	if err := config.ApplyEnv(&c, good); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if f := c.Federation; f.NodeID != "au-sydney" || f.TokenSecret != secret || f.AnnounceEvery != config.Duration(200*time.Millisecond) || f.Role != config.FederationRoleGame {
		t.Fatalf("federation %+v", f)
	}
	for _, tc := range []struct {
		name    string
		environ []string
		want    string
	}{
		{"secret without home", []string{"MUSTER__FEDERATION__TOKEN_SECRET=" + secret},
			"muster.federation.token-secret / MUSTER__FEDERATION__TOKEN_SECRET: given, but muster.federation.home-url is empty"},
		{"node key without home", []string{"MUSTER__FEDERATION__NODE_KEY=" + nodeKey},
			"muster.federation.node-key / MUSTER__FEDERATION__NODE_KEY: given, but"},
		{"short secret", append(good[:2:2], "MUSTER__FEDERATION__TOKEN_SECRET=short-secret", "MUSTER__FEDERATION__KEY_FILE=k"),
			"muster.federation.token-secret / MUSTER__FEDERATION__TOKEN_SECRET: a federation node needs home's token secret, at least 16 bytes; got 12"},
		{"no key file", good[:3:3],
			"muster.federation.key-file / MUSTER__FEDERATION__KEY_FILE: a federation node needs a file"},
		{"bad node id", append([]string{"MUSTER__FEDERATION__NODE_ID=AU Sydney"}, good[2:]...), // home-url below
			"muster.federation.node-id / MUSTER__FEDERATION__NODE_ID: want a node id"},
		{"bad interval", append(good[:6:6], "MUSTER__FEDERATION__ANNOUNCE_EVERY=0"),
			"muster.federation.announce-every / MUSTER__FEDERATION__ANNOUNCE_EVERY: want a positive duration"},
		{"bad role", append(good[:6:6], "MUSTER__FEDERATION__ROLE=relay"),
			"muster.federation.role / MUSTER__FEDERATION__ROLE: want full or game, got \"relay\""},
		{"role without home", []string{"MUSTER__FEDERATION__ROLE=game"},
			"muster.federation.role / MUSTER__FEDERATION__ROLE: given, but muster.federation.home-url is empty"},
		{"game role with playlists", append(good[:6:6], "MUSTER__FEDERATION__ROLE=game", "MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=duel"),
			"muster.federation.role / MUSTER__FEDERATION__ROLE: a game-role server hosts only the rooms home places"},
		{"huge interval", append(good[:6:6], "MUSTER__FEDERATION__ANNOUNCE_EVERY=2562047h"),
			"muster.federation.announce-every / MUSTER__FEDERATION__ANNOUNCE_EVERY: want at most 1h, got 2562047h0m0s"},
	} {
		c := defaults(t)
		env := tc.environ
		if tc.name == "bad node id" {
			env = append(env, good[0])
		}
		if err := config.ApplyEnv(&c, env); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, secret) || strings.Contains(msg, nodeKey) || strings.Contains(msg, "short-secret") {
			t.Errorf("%s: a secret in %q", tc.name, msg)
		}
	}
}
