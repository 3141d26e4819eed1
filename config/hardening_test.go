package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/muster-gg/muster/config"
)

const key16 = "0123456789abcdef"

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"redis:6379":                           "redis:6379",
		"a:1,b:2?master=m":                     "a:1,b:2?master=m",
		"redis://redis:6379/1":                 "redis://redis:6379/1",
		"redis://:pw@redis:6379/1":             "redis://:xxxxx@redis:6379/1",
		"rediss://user:pw@redis:6379":          "rediss://user:xxxxx@redis:6379",
		"redis://h:1?password=pw&db=2":         "redis://h:1?db=2&password=xxxxx",
		"a:1,b:2?master=m&sentinel_password=x": "a:1,b:2?master=m&sentinel_password=xxxxx",
		"redis://u:p@w@h:1":                    "redis://u:xxxxx@h:1",
		"redis://pw@h:1%":                      "redis://xxxxx@h:1%",
	} {
		if got := config.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSecurityKey: a fleet without a security key, or a key too short for
// the relay, stops start-up with one line naming the key.
func TestSecurityKey(t *testing.T) {
	t.Parallel()
	fleetVar := "MUSTER__SERVER__FLEET__REDIS=redis:6379"
	for _, tt := range []struct {
		name    string
		environ []string
		want    string // "" for no error
	}{
		{name: "one server needs no key", environ: []string{"MUSTER__SERVER__HTTP__PORT=9000"}},
		{name: "fleet with a key", environ: []string{fleetVar, "MUSTER__SECURITY__KEY=" + key16}},
		{name: "fleet without a key", environ: []string{fleetVar},
			want: "config: muster.security.key / MUSTER__SECURITY__KEY: a fleet (muster.server.fleet.redis is set) needs a security key of at least 16 bytes, the same on every server"},
		{name: "fleet with only a relay secret", environ: []string{fleetVar, "MUSTER__SERVER__FLEET__SECRET=" + key16},
			want: "config: muster.security.key / MUSTER__SECURITY__KEY: a fleet (muster.server.fleet.redis is set) needs a security key of at least 16 bytes, the same on every server"},
		{name: "short key", environ: []string{"MUSTER__SECURITY__KEY=s3cret"},
			want: "config: muster.security.key / MUSTER__SECURITY__KEY: want at least 16 bytes, got 6 (from the environment)"},
		{name: "short relay secret", environ: []string{fleetVar, "MUSTER__SECURITY__KEY=" + key16, "MUSTER__SERVER__FLEET__SECRET=s3cret"},
			want: "config: muster.server.fleet.secret / MUSTER__SERVER__FLEET__SECRET: want at least 16 bytes, got 6 (from the environment)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Load("", tt.environ, defaults(t))
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want == "":
			case err == nil:
				t.Fatalf("no error, want %s", tt.want)
			case err.Error() != tt.want || !errors.Is(err, config.ErrInvalid):
				t.Errorf("error\n got %s\nwant %s", err, tt.want)
			case strings.Contains(err.Error(), "s3cret"):
				t.Errorf("error %s shows the key", err)
			}
		})
	}
	// In a file, the line is named.
	_, err := config.Parse([]byte("muster:\n  security:\n    key: \"short\"\n"), nil, defaults(t))
	if want := "config: muster.security.key / MUSTER__SECURITY__KEY: want at least 16 bytes, got 5 (line 3)"; err == nil || err.Error() != want {
		t.Errorf("Parse = %v, want %s", err, want)
	}
}
