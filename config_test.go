package muster

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/muster-gg/muster/config"
)

// TestDefaultConfigIsConfigYML: config.yml documents DefaultConfig, which
// passes CheckConfig. Parsed with no environment over DefaultConfig, or
// over a zero Config (it spells out every key), it gives DefaultConfig; so
// does decoding it as plain YAML. It differs from the packages' defaults
// nowhere: its drain timeout is the fleet's 30 s (the 360 s that
// deployments often use is in its comment only).
func TestDefaultConfigIsConfigYML(t *testing.T) {
	t.Parallel()
	def := DefaultConfig()
	if err := CheckConfig(def); err != nil {
		t.Fatal(err)
	}
	if w := def.Warnings(); len(w) != 0 {
		t.Errorf("DefaultConfig().Warnings() = %q", w)
	}
	data, err := os.ReadFile("config.yml")
	if err != nil {
		t.Fatal(err)
	}
	for name, base := range map[string]config.Config{"DefaultConfig": def, "a zero Config": {}} {
		got, err := config.Parse(data, nil, base, CheckConfig)
		if err != nil {
			t.Fatalf("config.yml over %s: %v", name, err)
		}
		if !reflect.DeepEqual(got, def) {
			t.Errorf("config.yml over %s = %+v, DefaultConfig() = %+v", name, got, def)
		}
	}
	var f struct {
		Muster config.Config `yaml:"muster"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatal(err)
	}
	if len(f.Muster.Matchmaking.Playlists) == 0 {
		f.Muster.Matchmaking.Playlists = nil // [] in the file
	}
	if !reflect.DeepEqual(f.Muster, def) {
		t.Errorf("config.yml decoded over a zero Config = %+v, want %+v", f.Muster, def)
	}
}

// TestCheckConfig: the settings only a package can decide are refused with
// one line that names the key, its variable and where the value came from.
func TestCheckConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		file    string   // parsed when environ is nil
		environ []string // loaded with no file
		want    string   // the whole message
	}{
		{name: "bad redis", environ: []string{"MUSTER__SERVER__FLEET__REDIS=http://redis:6379"},
			want: `config: muster.server.fleet.redis / MUSTER__SERVER__FLEET__REDIS: scheme "http": want redis://, rediss:// or unix:// (Sentinel and Cluster are redis:// with master_name= or cluster=true); got "http://redis:6379" (from the environment)`},
		{name: "redis without port", environ: []string{"MUSTER__SERVER__FLEET__REDIS=redis"},
			want: `config: muster.server.fleet.redis / MUSTER__SERVER__FLEET__REDIS: "redis": want host:port; got "redis" (from the environment)`},
		{name: "empty cluster", file: "muster:\n  server:\n    fleet:\n      cluster: \"\"\n",
			want: `config: muster.server.fleet.cluster / MUSTER__SERVER__FLEET__CLUSTER: want a name of 1-256 bytes without { } : or NUL, got "" (line 4)`},
		{name: "cluster with a brace", environ: []string{"MUSTER__SERVER__FLEET__CLUSTER=a{b}"},
			want: `config: muster.server.fleet.cluster / MUSTER__SERVER__FLEET__CLUSTER: want a name of 1-256 bytes without { } : or NUL, got "a{b}" (from the environment)`},
		{name: "bad node-id", file: "muster:\n  server:\n    fleet:\n      node-id: \"a:b\"\n",
			want: `config: muster.server.fleet.node-id / MUSTER__SERVER__FLEET__NODE_ID: want a name of at most 256 bytes without spaces, control characters, { } : or NUL, got "a:b" (line 4)`},
		{name: "node-id with a space and an escape", environ: []string{"MUSTER__SERVER__FLEET__NODE_ID=a b\x1b[31mred"},
			want: `config: muster.server.fleet.node-id / MUSTER__SERVER__FLEET__NODE_ID: want a name of at most 256 bytes without spaces, control characters, { } : or NUL, got "a b\x1b[31mred" (from the environment)`},
		{name: "workers", environ: []string{"MUSTER__ROOM__WORKERS=99999999999"},
			want: `config: muster.room.workers / MUSTER__ROOM__WORKERS: want 0 (one per CPU) to 1024, got 99999999999 (from the environment)`},
		{name: "send queue", environ: []string{"MUSTER__ROOM__SEND_QUEUE=99999999999"},
			want: `config: muster.room.send-queue / MUSTER__ROOM__SEND_QUEUE: want 1-65536 frames, got 99999999999 (from the environment)`},
		{name: "max catch-up", environ: []string{"MUSTER__ROOM__MAX_CATCH_UP=99999999999"},
			want: `config: muster.room.max-catch-up / MUSTER__ROOM__MAX_CATCH_UP: want 1-1000 steps, got 99999999999 (from the environment)`},
		{name: "read limit", file: "muster:\n  room:\n    read-limit: 1073741824\n",
			want: `config: muster.room.read-limit / MUSTER__ROOM__READ_LIMIT: want 1-1048576 bytes (1 MiB), got 1073741824 (line 3)`},
		// The WebSocket library reads one byte past its limit: the largest
		// int64 wrapped round to a negative limit, which is none at all.
		{name: "read limit wrapping", environ: []string{"MUSTER__ROOM__READ_LIMIT=9223372036854775807"},
			want: `config: muster.room.read-limit / MUSTER__ROOM__READ_LIMIT: want 1-1048576 bytes (1 MiB), got 9223372036854775807 (from the environment)`},
		{name: "store", environ: []string{"MUSTER__ROOM__LIMITS__STORE=redis"},
			want: `config: muster.room.limits.store / MUSTER__ROOM__LIMITS__STORE: want memory or backplane, got "redis" (from the environment)`},
		{name: "lobby members", environ: []string{"MUSTER__LOBBY__MAX_MEMBERS=1000000"},
			want: `config: muster.lobby.max-members / MUSTER__LOBBY__MAX_MEMBERS: want 1-1000 members, got 1000000 (from the environment)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadConfig(tc.file, tc.environ)
			if err == nil || err.Error() != tc.want || strings.ContainsAny(err.Error(), "\r\n") || !errors.Is(err, config.ErrInvalid) {
				t.Errorf("error\n got %v\nwant %s", err, tc.want)
			}
		})
	}
}

// TestCheckConfigBounds: a key a package's constant bounds takes the bound
// and refuses the next value and the largest a variable can hold, with one
// line naming the key and its variable (config's TestUpperBounds has the
// other keys).
func TestCheckConfigBounds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ key, most, next string }{
		{"muster.room.max-catch-up", "1000", "1001"},
		{"muster.room.read-limit", "1048576", "1048577"},
		{"muster.lobby.max-members", "1000", "1001"},
	} {
		v := config.EnvName(tt.key)
		if _, err := loadConfig("", []string{v + "=" + tt.most}); err != nil {
			t.Errorf("%s=%s: %v", v, tt.most, err)
		}
		for _, val := range []string{tt.next, "9223372036854775807"} {
			_, err := loadConfig("", []string{v + "=" + val})
			if prefix := "config: " + tt.key + " / " + v + ": "; err == nil || !strings.HasPrefix(err.Error(), prefix) || !errors.Is(err, config.ErrInvalid) {
				t.Errorf("%s=%s: error %v, want one starting %q", v, val, err, prefix)
			}
		}
	}
}

// TestFederationHomeURL: a home URL that is not a base URL is refused with
// a line naming the key, and no secret in it.
func TestFederationHomeURL(t *testing.T) {
	t.Parallel()
	const secret = "token-secret-0123456789"
	const nodeKey = "mfn_node-key-that-must-not-show"
	c := DefaultConfig()
	if err := config.ApplyEnv(&c, []string{"MUSTER__FEDERATION__HOME_URL=ftp://h",
		"MUSTER__FEDERATION__TOKEN_SECRET=" + secret, "MUSTER__FEDERATION__NODE_KEY=" + nodeKey, "MUSTER__FEDERATION__KEY_FILE=k",
	}); err != nil {
		t.Fatal(err)
	}
	err := CheckConfig(c)
	if want := "muster.federation.home-url / MUSTER__FEDERATION__HOME_URL: want an http:// or https:// URL"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%v, want %q", err, want)
	}
	if msg := err.Error(); strings.Contains(msg, secret) || strings.Contains(msg, nodeKey) {
		t.Errorf("a secret in %q", msg)
	}
}

// TestComposeRequiresKey: docker-compose.yml has no default security key
// (a published default would be every copy's key): compose refuses to
// start until MUSTER_KEY is set, and with it the game's environment is a
// valid fleet configuration.
func TestComposeRequiresKey(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	env := c.Services["game"].Environment
	required := regexp.MustCompile(`^\$\{MUSTER_KEY:\?[^${}]+\}$`)
	if v := env["MUSTER__SECURITY__KEY"]; !required.MatchString(v) {
		t.Fatalf("game's MUSTER__SECURITY__KEY = %q, want ${MUSTER_KEY:?message}: no default", v)
	}
	var environ []string
	for name, value := range env {
		if strings.Contains(value, ":-") && strings.Contains(strings.ToUpper(name), "KEY") {
			t.Errorf("%s has a default: %q", name, value)
		}
		value = required.ReplaceAllString(value, "0123456789abcdef0123456789abcdef")
		environ = append(environ, name+"="+value)
	}
	cfg, err := loadConfig("", environ)
	if err != nil {
		t.Fatalf("the game's environment: %v", err)
	}
	if cfg.Server.Fleet.Redis == "" || len(cfg.Warnings()) != 0 {
		t.Errorf("the game's environment: redis %q, warnings %q", cfg.Server.Fleet.Redis, cfg.Warnings())
	}
	// Without the key, the same environment would not start.
	for i, kv := range environ {
		if strings.HasPrefix(kv, "MUSTER__SECURITY__KEY=") {
			environ[i] = "MUSTER__SECURITY__KEY="
		}
	}
	if _, err := loadConfig("", environ); err == nil || !strings.Contains(err.Error(), "muster.security.key / MUSTER__SECURITY__KEY") {
		t.Errorf("without the key: %v", err)
	}
}
