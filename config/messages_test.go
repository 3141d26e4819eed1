package config_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/muster-gg/muster/config"
)

// TestDidYouMean: an unknown key, in the file or the environment, is named
// with the nearest real one.
func TestDidYouMean(t *testing.T) {
	t.Parallel()
	cases := []badCase{
		{name: "misspelt in the file", file: "muster:\n  server:\n    capacity:\n      max-lod: 3\n",
			want: "config: muster.server.capacity.max-lod / MUSTER__SERVER__CAPACITY__MAX_LOD: unknown key; did you mean muster.server.capacity.max-load? (line 4)"},
		{name: "underscore in the file", file: "muster:\n  server:\n    fleet:\n      node_id: a\n",
			want: "config: muster.server.fleet.node_id / MUSTER__SERVER__FLEET__NODE_ID: unknown key; did you mean muster.server.fleet.node-id? (line 4)"},
		{name: "wrong level in the file", file: "muster:\n  server:\n    redis: r:1\n",
			want: "config: muster.server.redis / MUSTER__SERVER__REDIS: unknown key; did you mean muster.server.fleet.redis? (line 3)"},
		{name: "misspelt variable", environ: []string{"MUSTER__SERVER__FLEET__HEARTBEET=1"},
			want: "config: muster.server.fleet.heartbeet / MUSTER__SERVER__FLEET__HEARTBEET: unknown key; did you mean MUSTER__SERVER__FLEET__HEARTBEAT? (from the environment)"},
		{name: "variable at the wrong level", environ: []string{"MUSTER__SECURITY__TOKEN=1"},
			want: "config: muster.security.token / MUSTER__SECURITY__TOKEN: unknown key; did you mean MUSTER__SERVER__DRAIN__TOKEN? (from the environment)"},
		{name: "nothing near", environ: []string{"MUSTER__COLOUR=blue"},
			want: "config: muster.colour / MUSTER__COLOUR: unknown key (from the environment)"},
	}
	for i := range cases {
		cases[i].err = config.ErrUnknownKey
	}
	refuses(t, cases)
}

// TestSingleUnderscoreWarning: a MUSTER_ variable with single underscores
// is ignored, which Warnings says, with the variable meant.
func TestSingleUnderscoreWarning(t *testing.T) {
	t.Parallel()
	c, err := config.Load("", []string{
		"MUSTER_SERVER_HTTP_PORT=9000",
		"muster_server_fleet_redis=r:1",
		"MUSTER_SECURITY_KEY=x",
		"MUSTER_DRAIN_TOKEN=t",     // the muster command's own
		"MUSTER_HOME_URL=http://h", // not near any setting
		"MUSTER_=1",
	}, defaults(t))
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.HTTP.Port != 8080 {
		t.Errorf("port = %d: a single-underscore variable set it", c.Server.HTTP.Port)
	}
	want := []string{
		"config: MUSTER_SERVER_HTTP_PORT is ignored: did you mean MUSTER__SERVER__HTTP__PORT (muster.server.http.port)? A setting's variable has a double underscore between levels",
		"config: muster_server_fleet_redis is ignored: did you mean MUSTER__SERVER__FLEET__REDIS (muster.server.fleet.redis)? A setting's variable has a double underscore between levels",
		"config: MUSTER_SECURITY_KEY is ignored: did you mean MUSTER__SECURITY__KEY (muster.security.key)? A setting's variable has a double underscore between levels",
	}
	if got := c.Warnings(); !slices.Equal(got, want) {
		t.Errorf("Warnings =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := defaults(t); len(d.Warnings()) != 0 {
		t.Errorf("defaults' Warnings() = %q", d.Warnings())
	}
}

// TestYAMLSyntaxLine: a YAML syntax error names the line that is wrong,
// not the line where the enclosing mapping began.
func TestYAMLSyntaxLine(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, file string
		line       int
	}{
		{"unclosed list", "muster:\n  server:\n    http: [\n", 3},
		{"bad indentation", "muster:\n  server:\n    http:\n      port: 8080\n     host: x\n", 5},
		{"list item in a mapping", "muster:\n  server:\n    http:\n      port: 8080\n  - x\n", 5},
		{"unclosed flow mapping", "muster:\n  server:\n    http: {port: 1\n    fleet: {}\n", 3},
		{"tab", "muster:\n  server:\n    http:\n\tport: 8080\n", 4},
		{"missing colon", "muster:\n  server:\n    http:\n      port: 8080\n    fleet\n      redis: x\n", 5},
		{"unclosed quote", "muster:\n  server:\n    http:\n      host: \"abc\n      port: 1\n", 4},
		{"after a quoted multi-line value", "muster:\n  security:\n    key: \"a\n      b\"\n  server:\n    http:\n      port: 1\n     host: x\n", 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := config.Parse([]byte(tt.file), nil, defaults(t))
			var e *config.Error
			if !errors.As(err, &e) || !errors.Is(err, config.ErrSyntax) {
				t.Fatalf("Parse = %v, want a syntax error", err)
			}
			if e.Line != tt.line {
				t.Errorf("error %v: line %d, want %d", err, e.Line, tt.line)
			}
		})
	}
}
