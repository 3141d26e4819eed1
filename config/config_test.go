package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/muster-gg/muster/config"
)

// file is the shape of config.yml.
type file struct {
	Muster config.Config `yaml:"muster"`
}

// defaults returns config.yml's settings, parsed over a zero Config: the
// file spells out every key. They are the documented defaults, the base
// these tests load over; package muster's tests check that they are
// muster.DefaultConfig, the packages' own.
func defaults(t testing.TB) config.Config {
	t.Helper()
	c, err := ymlDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var ymlDefaults = sync.OnceValues(func() (config.Config, error) {
	data, err := os.ReadFile("../config.yml")
	if err != nil {
		return config.Config{}, err
	}
	return config.Parse(data, nil, config.Config{})
})

func TestOverrides(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		file    string // "" for no file
		environ []string
		want    func(*config.Config)
	}{
		{
			name: "defaults",
			want: func(*config.Config) {},
		},
		{
			name:    "nested key",
			environ: []string{"MUSTER__SERVER__FLEET__REDIS=redis:6379", "MUSTER__SECURITY__KEY=0123456789abcdef"},
			want: func(c *config.Config) {
				c.Server.Fleet.Redis = "redis:6379"
				c.Security.Key = "0123456789abcdef"
			},
		},
		{
			name:    "operator port",
			environ: []string{"MUSTER__SERVER__HTTP__OPERATOR_PORT=9090"},
			want:    func(c *config.Config) { c.Server.HTTP.OperatorPort = 9090 },
		},
		{
			name:    "operator port 0",
			environ: []string{"MUSTER__SERVER__HTTP__OPERATOR_PORT=0"},
			want:    func(*config.Config) {},
		},
		{
			name:    "dash as underscore",
			environ: []string{"MUSTER__SERVER__CAPACITY__MAX_LOAD=300", "MUSTER__SERVER__FLEET__NODE_PARAM=n"},
			want: func(c *config.Config) {
				c.Server.Capacity.MaxLoad = 300
				c.Server.Fleet.NodeParam = "n"
			},
		},
		{
			name:    "any case",
			environ: []string{"muster__server__http__port=9000", "Muster__Security__Key=kkkkkkkkkkkkkkkk"},
			want: func(c *config.Config) {
				c.Server.HTTP.Port = 9000
				c.Security.Key = "kkkkkkkkkkkkkkkk"
			},
		},
		{
			name:    "durations",
			environ: []string{"MUSTER__SERVER__DRAIN__TIMEOUT=360", "MUSTER__SERVER__FLEET__HEARTBEAT=1500ms"},
			want: func(c *config.Config) {
				c.Server.Drain.Timeout = config.Duration(360 * time.Second)
				c.Server.Fleet.Heartbeat = config.Duration(1500 * time.Millisecond)
			},
		},
		{
			name:    "other variables ignored",
			environ: []string{"PATH=/bin", "MUSTER_HOME=/x", "MUSTER=1", "NOEQUALS", "=C:=C:\\"},
			want:    func(*config.Config) {},
		},
		{
			name: "file over default",
			file: "muster:\n  server:\n    drain:\n      timeout: 0.5\n    fleet:\n      internal-address: \"{ip}:8000\"\n",
			want: func(c *config.Config) {
				c.Server.Drain.Timeout = config.Duration(500 * time.Millisecond)
				c.Server.Fleet.InternalAddress = "{ip}:8000"
			},
		},
		{
			name:    "environment over file",
			file:    "muster:\n  server:\n    fleet:\n      cluster: eu\n      region: eu-west\n",
			environ: []string{"MUSTER__SERVER__FLEET__CLUSTER=us"},
			want: func(c *config.Config) {
				c.Server.Fleet.Cluster = "us"
				c.Server.Fleet.Region = "eu-west"
			},
		},
		{
			name:    "empty variable sets empty",
			file:    "muster:\n  security:\n    key: k\n",
			environ: []string{"MUSTER__SECURITY__KEY="},
			want:    func(*config.Config) {},
		},
		{
			name: "null keeps default, other root keys ignored",
			file: "game:\n  levels: [1, 2]\nmuster:\n  server:\n    http:\n      port:\n    fleet: ~\n",
			want: func(*config.Config) {},
		},
		{
			name: "anchors and quoted numbers",
			file: "muster:\n  server:\n    http: {host: &h \"127.0.0.1\", port: \"9000\"}\n    fleet: {region: *h}\n",
			want: func(c *config.Config) {
				c.Server.HTTP = config.HTTP{Host: "127.0.0.1", Port: 9000}
				c.Server.Fleet.Region = "127.0.0.1"
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := load(t, tt.file, tt.environ)
			if err != nil {
				t.Fatal(err)
			}
			want := defaults(t)
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

// load loads content written to a temporary config.yml, or no file if
// content is "".
func load(t *testing.T, content string, environ []string) (config.Config, error) {
	t.Helper()
	if content == "" {
		return config.Load("", environ, defaults(t))
	}
	path := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return config.Load(path, environ, defaults(t))
}

// TestEveryKeyFromEnv sets each setting of Config by its variable.
func TestEveryKeyFromEnv(t *testing.T) {
	t.Parallel()
	n := 0
	// get returns the setting's field in a Config; a list's items are
	// reached as item 0, which get makes.
	type get func(*config.Config) reflect.Value
	var walk func(typ reflect.Type, g get, env string)
	walk = func(typ reflect.Type, g get, env string) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			name := env + "__" + strings.ToUpper(strings.ReplaceAll(f.Tag.Get("yaml"), "-", "_"))
			fg := func(c *config.Config) reflect.Value { return g(c).Field(i) }
			switch f.Type.Kind() {
			case reflect.Struct:
				walk(f.Type, fg, name)
				continue
			case reflect.Slice:
				walk(f.Type.Elem(), func(c *config.Config) reflect.Value {
					l := fg(c)
					if l.Len() == 0 {
						l.Set(reflect.MakeSlice(l.Type(), 1, 1))
					}
					return l.Index(0)
				}, name+"__0")
				continue
			}
			n++
			var got, want config.Config
			value := "7"
			if fg(&want).Kind() == reflect.Bool {
				value = "true"
			}
			if err := config.ApplyEnv(&got, []string{name + "=" + value}); err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			switch p := fg(&want).Addr().Interface().(type) {
			case *bool:
				*p = true
			case *string:
				*p = "7"
			case *int:
				*p = 7
			case *float64:
				*p = 7
			case *config.Duration:
				*p = config.Duration(7 * time.Second)
			default:
				t.Fatalf("%s: unexpected type %T", name, p)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s=%s: got %+v, want %+v", name, value, got, want)
			}
		}
	}
	walk(reflect.TypeFor[config.Config](), func(c *config.Config) reflect.Value { return reflect.ValueOf(c).Elem() }, "MUSTER")
	if n != 95 {
		t.Errorf("walked %d settings, want 95", n)
	}
}

// A badCase is a configuration that loading refuses: file (parsed when
// environ is nil) or environ (loaded with no file), over the defaults.
type badCase struct {
	name    string
	file    string
	environ []string
	want    string // the whole message
	err     error  // the sentinel it wraps
}

// refuses runs each case in parallel: loading must fail with tc.want, on
// one line, wrapping tc.err.
func refuses(t *testing.T, cases []badCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var err error
			if tc.environ != nil {
				_, err = config.Load("", tc.environ, defaults(t))
			} else {
				_, err = config.Parse([]byte(tc.file), nil, defaults(t))
			}
			if err == nil || err.Error() != tc.want || strings.ContainsAny(err.Error(), "\r\n") || !errors.Is(err, tc.err) {
				t.Errorf("error\n got %v\nwant %s (%v)", err, tc.want, tc.err)
			}
		})
	}
}

func TestBadConfig(t *testing.T) {
	t.Parallel()
	refuses(t, []badCase{
		{name: "YAML syntax", file: "muster:\n  server:\n    http: [\n",
			want: "config: did not find expected node content (line 3)", err: config.ErrSyntax},
		{name: "YAML syntax without a line", file: "muster: *nowhere\n",
			want: "config: unknown anchor 'nowhere' referenced", err: config.ErrSyntax},
		{name: "duplicate key", file: "muster:\n  server:\n    http:\n      port: 1\n      port: 2\n",
			want: "config: muster.server.http.port / MUSTER__SERVER__HTTP__PORT: key written twice (line 5)", err: config.ErrSyntax},
		{name: "empty file",
			want: "config: missing root key muster", err: config.ErrNoRoot},
		{name: "no root key", file: "Muster:\n  server: {}\n",
			want: `config: missing root key muster; did you mean muster, not "Muster"? (line 1)`, err: config.ErrNoRoot},
		{name: "root not a mapping", file: "- muster\n",
			want: "config: missing root key muster", err: config.ErrNoRoot},
		{name: "unknown key", file: "muster:\n  server:\n    fleet:\n      redis: \"\"\n      hearbeat: 5\n",
			want: "config: muster.server.fleet.hearbeat / MUSTER__SERVER__FLEET__HEARBEAT: unknown key; did you mean muster.server.fleet.heartbeat? (line 5)", err: config.ErrUnknownKey},
		{name: "unknown top key", file: "muster:\n  servr: {}\n",
			want: "config: muster.servr / MUSTER__SERVR: unknown key; did you mean muster.server? (line 2)", err: config.ErrUnknownKey},
		{name: "wrong type", file: "muster:\n  server:\n    capacity:\n      max-load: abc\n",
			want: `config: muster.server.capacity.max-load / MUSTER__SERVER__CAPACITY__MAX_LOAD: want an integer, got "abc" (line 4)`, err: config.ErrInvalid},
		{name: "list for a value", file: "muster:\n  server:\n    fleet:\n      redis: [a, b]\n",
			want: "config: muster.server.fleet.redis / MUSTER__SERVER__FLEET__REDIS: want a value, got a list (line 4)", err: config.ErrInvalid},
		{name: "value for a section", file: "muster:\n  server:\n    http: 8080\n",
			want: `config: muster.server.http / MUSTER__SERVER__HTTP: want a mapping, got "8080" (line 3)`, err: config.ErrInvalid},
		{name: "newline in a value", file: "muster:\n  server:\n    http:\n      port: \"80\\n80\"\n",
			want: `config: muster.server.http.port / MUSTER__SERVER__HTTP__PORT: want an integer, got "80\n80" (line 4)`, err: config.ErrInvalid},
		{name: "real-ip-header not a header name", environ: []string{"MUSTER__SERVER__HTTP__REAL_IP_HEADER=X Real IP"},
			want: `config: muster.server.http.real-ip-header / MUSTER__SERVER__HTTP__REAL_IP_HEADER: want a header name such as X-Real-IP, or "", got "X Real IP" (from the environment)`, err: config.ErrInvalid},
		{name: "port out of range", file: "muster:\n  server:\n    http:\n      port: 70000\n",
			want: "config: muster.server.http.port / MUSTER__SERVER__HTTP__PORT: want a port number 1-65535, got 70000 (line 4)", err: config.ErrInvalid},
		{name: "port out of range from environment", environ: []string{"MUSTER__SERVER__HTTP__PORT=0"},
			want: "config: muster.server.http.port / MUSTER__SERVER__HTTP__PORT: want a port number 1-65535, got 0 (from the environment)", err: config.ErrInvalid},
		{name: "operator-port negative", environ: []string{"MUSTER__SERVER__HTTP__OPERATOR_PORT=-1"},
			want: "config: muster.server.http.operator-port / MUSTER__SERVER__HTTP__OPERATOR_PORT: want 0 (the operator's paths on muster.server.http.port) or a port number 1-65535, got -1 (from the environment)", err: config.ErrInvalid},
		{name: "operator-port out of range", file: "muster:\n  server:\n    http:\n      operator-port: 70000\n",
			want: "config: muster.server.http.operator-port / MUSTER__SERVER__HTTP__OPERATOR_PORT: want 0 (the operator's paths on muster.server.http.port) or a port number 1-65535, got 70000 (line 4)", err: config.ErrInvalid},
		{name: "operator-port is the game's port", file: "muster:\n  server:\n    http:\n      port: 9090\n      operator-port: 9090\n",
			want: "config: muster.server.http.operator-port / MUSTER__SERVER__HTTP__OPERATOR_PORT: want a port other than muster.server.http.port (9090), or 0 to serve the operator's paths on it (line 5)", err: config.ErrInvalid},
		{name: "operator-port is the default game port", environ: []string{"MUSTER__SERVER__HTTP__OPERATOR_PORT=8080"},
			want: "config: muster.server.http.operator-port / MUSTER__SERVER__HTTP__OPERATOR_PORT: want a port other than muster.server.http.port (8080), or 0 to serve the operator's paths on it (from the environment)", err: config.ErrInvalid},
		{name: "bad host", file: "muster:\n  server:\n    http:\n      host: \"a b\"\n",
			want: `config: muster.server.http.host / MUSTER__SERVER__HTTP__HOST: want a host name or IP address, got "a b" (line 4)`, err: config.ErrInvalid},
		{name: "zero max-load", file: "muster:\n  server:\n    capacity:\n      max-load: 0\n",
			want: "config: muster.server.capacity.max-load / MUSTER__SERVER__CAPACITY__MAX_LOAD: want a positive integer, got 0 (line 4)", err: config.ErrInvalid},
		{name: "load-step below -1", environ: []string{"MUSTER__SERVER__CAPACITY__LOAD_STEP=-2"},
			want: "config: muster.server.capacity.load-step / MUSTER__SERVER__CAPACITY__LOAD_STEP: want 0 (max-load/20), -1 (exact) or a positive step, got -2 (from the environment)", err: config.ErrInvalid},
		{name: "negative drain timeout", environ: []string{"MUSTER__SERVER__DRAIN__TIMEOUT=-1"},
			want: "config: muster.server.drain.timeout / MUSTER__SERVER__DRAIN__TIMEOUT: want a positive duration, got -1s (from the environment)", err: config.ErrInvalid},
		{name: "bad duration", file: "muster:\n  server:\n    drain:\n      timeout: soon\n",
			want: `config: muster.server.drain.timeout / MUSTER__SERVER__DRAIN__TIMEOUT: want seconds (2, 0.5) or a duration ("1500ms"), got "soon" (line 4)`, err: config.ErrInvalid},
		{name: "infinite duration", file: "muster:\n  server:\n    drain:\n      timeout: .inf\n",
			want: `config: muster.server.drain.timeout / MUSTER__SERVER__DRAIN__TIMEOUT: want seconds (2, 0.5) or a duration ("1500ms"), got ".inf" (line 4)`, err: config.ErrInvalid},
		{name: "heartbeat too short", file: "muster:\n  server:\n    fleet:\n      heartbeat: 0.05\n",
			want: "config: muster.server.fleet.heartbeat / MUSTER__SERVER__FLEET__HEARTBEAT: want 100ms to 1m, got 50ms (line 4)", err: config.ErrInvalid},
		// 3 heartbeats, a server record's time to live, would wrap
		// round to a negative duration.
		{name: "heartbeat too long", environ: []string{"MUSTER__SERVER__FLEET__HEARTBEAT=2562047h"},
			want: "config: muster.server.fleet.heartbeat / MUSTER__SERVER__FLEET__HEARTBEAT: want 100ms to 1m, got 2562047h0m0s (from the environment)", err: config.ErrInvalid},
		{name: "drain timeout too long", environ: []string{"MUSTER__SERVER__DRAIN__TIMEOUT=8760h"},
			want: "config: muster.server.drain.timeout / MUSTER__SERVER__DRAIN__TIMEOUT: want at most 24h, got 8760h0m0s (from the environment)", err: config.ErrInvalid},
		{name: "internal address without port", file: "muster:\n  server:\n    fleet:\n      internal-address: \"{ip}\"\n",
			want: `config: muster.server.fleet.internal-address / MUSTER__SERVER__FLEET__INTERNAL_ADDRESS: want host:port or {ip}:port, got "{ip}" (line 4)`, err: config.ErrInvalid},
		{name: "internal address with another placeholder", file: "muster:\n  server:\n    fleet:\n      internal-address: \"{node-id}:8000\"\n",
			want: `config: muster.server.fleet.internal-address / MUSTER__SERVER__FLEET__INTERNAL_ADDRESS: want host:port or {ip}:port, got "{node-id}:8000" (line 4)`, err: config.ErrInvalid},
		{name: "public address with another placeholder", file: "muster:\n  server:\n    fleet:\n      public-address: \"wss://{ip}.example.com\"\n",
			want: `config: muster.server.fleet.public-address / MUSTER__SERVER__FLEET__PUBLIC_ADDRESS: want an address or URL, which may hold {node-id}, got "wss://{ip}.example.com" (line 4)`, err: config.ErrInvalid},
		{name: "bad node-param", environ: []string{"MUSTER__SERVER__FLEET__NODE_PARAM=a&b"},
			want: `config: muster.server.fleet.node-param / MUSTER__SERVER__FLEET__NODE_PARAM: want a query parameter name of letters, digits and - . _ ~, got "a&b" (from the environment)`, err: config.ErrInvalid},
		{name: "unknown variable", environ: []string{"MUSTER__SERVER__FLEET__REDIS_URL=x"},
			want: "config: muster.server.fleet.redis-url / MUSTER__SERVER__FLEET__REDIS_URL: unknown key; did you mean MUSTER__SERVER__FLEET__REDIS? (from the environment)", err: config.ErrUnknownKey},
		{name: "variable for a section", environ: []string{"MUSTER__SERVER__HTTP=x"},
			want: "config: muster.server.http / MUSTER__SERVER__HTTP: names a section, not a setting (from the environment)", err: config.ErrUnknownKey},
		{name: "variable with a newline", environ: []string{"MUSTER__SERVER\n=x"},
			want: `config: "muster.server\n" / "MUSTER__SERVER\n": unknown key; did you mean MUSTER__SERVER? (from the environment)`, err: config.ErrUnknownKey},
		{name: "wrong type from environment", environ: []string{"MUSTER__SERVER__CAPACITY__MAX_LOAD=abc"},
			want: `config: muster.server.capacity.max-load / MUSTER__SERVER__CAPACITY__MAX_LOAD: want an integer, got "abc" (from the environment)`, err: config.ErrInvalid},
		{name: "set twice", environ: []string{"MUSTER__SERVER__HTTP__PORT=1", "muster__server__http__port=2"},
			want: "config: muster.server.http.port / muster__server__http__port: also set by MUSTER__SERVER__HTTP__PORT (from the environment)", err: config.ErrInvalid},
	})
}

func TestLoadNamesFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yml")
	content := "muster:\n  server:\n    capacity:\n      max-load: -3\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := config.Load(path, nil, defaults(t))
	want := "config: muster.server.capacity.max-load / MUSTER__SERVER__CAPACITY__MAX_LOAD: want a positive integer, got -3 (" + path + " line 4)"
	if err == nil || err.Error() != want {
		t.Errorf("Load = %v, want %s", err, want)
	}

	// The environment's value is the one to blame.
	_, err = config.Load(path, []string{"MUSTER__SERVER__CAPACITY__MAX_LOAD=-4"}, defaults(t))
	want = "config: muster.server.capacity.max-load / MUSTER__SERVER__CAPACITY__MAX_LOAD: want a positive integer, got -4 (from the environment)"
	if err == nil || err.Error() != want {
		t.Errorf("Load = %v, want %s", err, want)
	}

	if _, err := config.Load(filepath.Join(t.TempDir(), "missing.yml"), nil, defaults(t)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file = %v, want os.ErrNotExist", err)
	}
}

func TestApplyEnvKeepsConfigOnError(t *testing.T) {
	t.Parallel()
	c := defaults(t)
	err := config.ApplyEnv(&c, []string{"MUSTER__SERVER__HTTP__PORT=1", "MUSTER__NOPE=1"})
	var e *config.Error
	if !errors.As(err, &e) || e.Var != "MUSTER__NOPE" || e.Key != "muster.nope" {
		t.Fatalf("ApplyEnv = %#v, want an *Error for MUSTER__NOPE", err)
	}
	if !reflect.DeepEqual(c, defaults(t)) {
		t.Errorf("config changed to %+v", c)
	}
}

func TestDuration(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"2", 2 * time.Second},
		{"0.5", 500 * time.Millisecond},
		{"0.1", 100 * time.Millisecond},
		{"1500ms", 1500 * time.Millisecond},
		{"2s", 2 * time.Second},
		{"1m30s", 90 * time.Second},
	} {
		var d config.Duration
		if err := yaml.Unmarshal([]byte(tt.in), &d); err != nil || time.Duration(d) != tt.want {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v", tt.in, d, err, tt.want)
		}
	}
	for _, in := range []string{"x", "[1]", ".nan", "1e300", "-1e300", "2 s"} {
		var d config.Duration
		if err := yaml.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("Unmarshal(%s) = %v, want an error", in, d)
		}
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	t.Parallel()
	want := defaults(t)
	want.Server.Drain.Timeout = config.Duration(1500 * time.Millisecond)
	want.Server.Fleet.Redis = "redis://:pw@redis:6379/1"
	want.Security.Key = "0123456789abcdef"
	want.Server.Fleet.PublicAddress = "wss://{node-id}.example.com"
	data, err := yaml.Marshal(file{want})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "timeout: 1.5\n") {
		t.Errorf("timeout not marshalled as seconds:\n%s", data)
	}
	got, err := config.Parse(data, nil, defaults(t))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Parse(Marshal(c)) = %+v, %v; want %+v", got, err, want)
	}
}

// same fails the test unless got, what a method returned, is want.
func same(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

func TestAddresses(t *testing.T) {
	t.Parallel()
	c := defaults(t)
	same(t, "default InternalAddress", c.InternalAddress("10.0.0.7"), "10.0.0.7:8080")
	same(t, "default InternalAddress for IPv6", c.InternalAddress("fd00::7"), "[fd00::7]:8080")
	same(t, "default PublicAddress", c.PublicAddress("eu-1"), "")
	same(t, "default Addr", c.Addr(), "0.0.0.0:8080")
	same(t, "OperatorAddr with operator-port 0", c.OperatorAddr(), "")
	c.Server.Fleet.InternalAddress = "{ip}:8000"
	same(t, "{ip}:8000 InternalAddress", c.InternalAddress("fd00::7"), "[fd00::7]:8000")
	c.Server.Fleet.InternalAddress = "game-3.internal:8000"
	same(t, "fixed InternalAddress", c.InternalAddress("10.0.0.7"), "game-3.internal:8000")
	c.Server.Fleet.PublicAddress = "wss://{node-id}.example.com"
	same(t, "PublicAddress", c.PublicAddress("eu-1"), "wss://eu-1.example.com")
	c.Server.HTTP.Host, c.Server.HTTP.OperatorPort = "127.0.0.1", 9090
	same(t, "OperatorAddr", c.OperatorAddr(), "127.0.0.1:9090")
}

func TestSecret(t *testing.T) {
	t.Parallel()
	c := defaults(t)
	same(t, "default Secret", c.Secret(), "")
	c.Security.Key = "key"
	same(t, "Secret with a security key", c.Secret(), "key")
	c.Server.Fleet.Secret = "relay"
	same(t, "Secret with fleet.secret", c.Secret(), "relay")
}

// The README's configuration reference is config.yml, as it stands.
func TestREADMEShowsConfigYML(t *testing.T) {
	t.Parallel()
	cfg, err := os.ReadFile("../config.yml")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(cfg), "\nmuster:\n")
	if !ok || !strings.Contains(string(readme), "```yaml\nmuster:\n"+body+"```\n") {
		t.Fatal("README.md's configuration reference is not config.yml from its muster: line on: copy it")
	}
}
