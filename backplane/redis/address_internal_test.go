package redis

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// got is what a client built from an address would use.
type got struct {
	kind                       Kind
	addrs                      []string // the server, the sentinels or the seeds
	user, pass                 string
	sentinelUser, sentinelPass string
	master                     string
	db                         int
	tls                        string // ServerName, "" without TLS
}

func describe(a *Address) got {
	switch a.Kind {
	case Sentinel:
		o := a.failover
		g := got{kind: Sentinel, addrs: o.SentinelAddrs, user: o.Username, pass: o.Password,
			sentinelUser: o.SentinelUsername, sentinelPass: o.SentinelPassword, master: o.MasterName, db: o.DB}
		if o.TLSConfig != nil {
			g.tls = o.TLSConfig.ServerName
		}
		return g
	case Cluster:
		o := a.cluster
		g := got{kind: Cluster, addrs: o.Addrs, user: o.Username, pass: o.Password}
		if o.TLSConfig != nil {
			g.tls = o.TLSConfig.ServerName
		}
		return g
	}
	o := a.single
	g := got{kind: Single, addrs: []string{o.Addr}, user: o.Username, pass: o.Password, db: o.DB}
	if o.TLSConfig != nil {
		g.tls = o.TLSConfig.ServerName
	}
	return g
}

func TestParseAddress(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     got
	}{
		{"host:port", "redis.internal:6379", got{kind: Single, addrs: []string{"redis.internal:6379"}}},
		{"url", "redis://app:s3cret@10.0.0.5:6380/2", got{kind: Single, addrs: []string{"10.0.0.5:6380"}, user: "app", pass: "s3cret", db: 2}},
		{"url default port", "redis://r.example", got{kind: Single, addrs: []string{"r.example:6379"}}},
		{"password only", "redis://:pw@h:1", got{kind: Single, addrs: []string{"h:1"}, pass: "pw"}},
		{"tls", "rediss://app:pw@cache.example.com:6380", got{kind: Single, addrs: []string{"cache.example.com:6380"}, user: "app", pass: "pw", tls: "cache.example.com"}},
		{"unix", "unix://:pw@/run/redis.sock?db=3", got{kind: Single, addrs: []string{"/run/redis.sock"}, pass: "pw", db: 3}},
		{"sentinel", "redis://app:pw@s1:26379/1?master_name=mymaster&addr=s2:26379&addr=s3:26379&sentinel_username=sen&sentinel_password=spw",
			got{kind: Sentinel, addrs: []string{"s1:26379", "s2:26379", "s3:26379"}, user: "app", pass: "pw", sentinelUser: "sen", sentinelPass: "spw", master: "mymaster", db: 1}},
		{"sentinel tls", "rediss://:pw@s1:26379?master_name=m", got{kind: Sentinel, addrs: []string{"s1:26379"}, pass: "pw", master: "m", tls: "s1"}},
		{"sentinel shorthand", "s1:26379,s2:26379?master=m", got{kind: Sentinel, addrs: []string{"s1:26379", "s2:26379"}, master: "m"}},
		{"cluster one seed", "rediss://app:pw@clustercfg.example.com:6379?cluster=true",
			got{kind: Cluster, addrs: []string{"clustercfg.example.com:6379"}, user: "app", pass: "pw", tls: "clustercfg.example.com"}},
		{"cluster seeds", "redis://n1:7000?addr=n2:7001&addr=n3:7002", got{kind: Cluster, addrs: []string{"n1:7000", "n2:7001", "n3:7002"}}},
		{"cluster shorthand", "n1:7000,n2:7001", got{kind: Cluster, addrs: []string{"n1:7000", "n2:7001"}}},
		{"cluster db 0", "redis://n1:7000/0?cluster=1", got{kind: Cluster, addrs: []string{"n1:7000"}}},
		{"ipv6", "redis://[::1]:6379", got{kind: Single, addrs: []string{"[::1]:6379"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := ParseAddress(c.in)
			if err != nil {
				t.Fatal(err)
			}
			g := describe(a)
			if g.kind != c.want.kind || !slices.Equal(g.addrs, c.want.addrs) || g.user != c.want.user || g.pass != c.want.pass ||
				g.sentinelUser != c.want.sentinelUser || g.sentinelPass != c.want.sentinelPass || g.master != c.want.master ||
				g.db != c.want.db || g.tls != c.want.tls {
				t.Errorf("ParseAddress(%q)\n got %+v\nwant %+v", c.in, g, c.want)
			}
			if strings.Contains(a.String(), "s3cret") || strings.Contains(a.String(), "spw") {
				t.Errorf("String() = %q shows a password", a)
			}
		})
	}
}

func TestParseAddressRefuses(t *testing.T) {
	for _, c := range []struct{ name, in, problem string }{
		{"empty", "", "empty"},
		{"no port", "redis.internal", "want host:port"},
		{"bad port", "redis://h:99999", "port"},
		{"unknown param", "redis://u:topsecret@h:1?dial_timeout=1s&bogus=1", "unknown parameter bogus"},
		{"unknown sentinel param", "redis://h:1?master_name=m&bogus=1", "unknown parameter bogus"},
		{"unknown cluster param", "redis://h:1?cluster=true&bogus=1", "unknown parameter bogus"},
		{"password param", "redis://h:1?master_name=m&password=topsecret", "user:password@"},
		{"sentinel creds alone", "redis://h:1?sentinel_password=topsecret", "need master_name"},
		{"read from replicas", "redis://h:1?cluster=true&read_only=true", "masters only"},
		{"sentinel and cluster", "redis://h:1?master_name=m&cluster=true", "exclude each other"},
		{"cluster db", "redis://h:1/3?cluster=true", "database 0"},
		{"bad cluster", "redis://h:1?cluster=maybe", "true or false"},
		{"bad addr", "redis://h:1?addr=nope", "want host:port"},
		{"scheme", "redis+sentinel://h:1", "scheme"},
		{"host list with password", "a:1,b:2?master=m&password=topsecret", "only ?master=name"},
		{"host list bad", "a:1,b", "want host:port"},
		{"bad duration", "redis://h:1?dial_timeout=soon", "dial_timeout"},
		{"unescaped slash in password", "redis://u:top/secret@h:1", "password"},
		{"no host", "redis://:topsecret@", "no host"},
		{"host with colons", "redis://user:top@secret@h:1:2", "bad host"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseAddress(c.in)
			var ae *AddressError
			if !errors.As(err, &ae) {
				t.Fatalf("ParseAddress(%q) = %v, want an *AddressError", c.in, err)
			}
			if !strings.Contains(ae.Problem, c.problem) {
				t.Errorf("problem %q, want it to mention %q", ae.Problem, c.problem)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error shows a password: %v", err)
			}
		})
	}
}

// TestOpenRespectsURLOptions checks that the control-plane defaults fill
// only what the URL leaves unset, for each kind of deployment.
func TestOpenRespectsURLOptions(t *testing.T) {
	type opts struct {
		dial, read, write time.Duration
		retries           int
	}
	for _, c := range []struct {
		name, url string
		want      opts
	}{
		{"single defaults", "redis://h:1", opts{time.Second, time.Second, time.Second, 0}}, // -1 (none) reads 0 after go-redis init
		{"single given", "redis://h:1?dial_timeout=3s&read_timeout=4s&max_retries=2", opts{3 * time.Second, 4 * time.Second, time.Second, 2}},
		{"sentinel given", "redis://h:1?master_name=m&dial_timeout=3s&write_timeout=5&max_retries=2", opts{3 * time.Second, time.Second, 5 * time.Second, 2}},
		{"cluster defaults", "redis://h:1?cluster=true", opts{time.Second, time.Second, time.Second, -1}},
		{"cluster given", "redis://h:1?cluster=true&read_timeout=4s&max_retries=2", opts{time.Second, 4 * time.Second, time.Second, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := ParseAddress(c.url)
			if err != nil {
				t.Fatal(err)
			}
			rdb, err := newClient(a, Config{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer rdb.Close()
			var g opts
			switch r := rdb.(type) {
			case *goredis.ClusterClient:
				o := r.Options()
				g = opts{o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.MaxRetries}
				if !o.DisableRoutingPolicies || o.ClusterStateReloadInterval != clusterReload {
					t.Errorf("cluster: DisableRoutingPolicies %v, reload interval %v", o.DisableRoutingPolicies, o.ClusterStateReloadInterval)
				}
			case *goredis.Client:
				o := r.Options()
				g = opts{o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.MaxRetries}
				if !o.ContextTimeoutEnabled {
					t.Error("ContextTimeoutEnabled is off")
				}
			default:
				t.Fatalf("client %T", rdb)
			}
			if g != c.want {
				t.Errorf("options %+v, want %+v", g, c.want)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"redis://app:pw@h:1/0":                             "redis://app:xxxxx@h:1/0",
		"redis://h:1?master_name=m&sentinel_password=spw":  "redis://h:1?master_name=m&sentinel_password=xxxxx",
		"a:1,b:2?master=m&password=pw":                     "a:1,b:2?master=m&password=xxxxx",
		"redis://u:p/w@h:1":                                "redis://u:xxxxx@h:1",
		"redis://u?sentinel_password=abc:def@h":            "redis://xxxxx@h",
		"x@y:1":                                            "xxxxx@y:1",
		"rediss://:pw@h:1?addr=h2:2&sentinel_Password=spw": "rediss://:xxxxx@h:1?addr=h2:2&sentinel_Password=xxxxx",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParseAddress checks that the parser never panics, and that no
// error and no String shows a password it was given.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{
		"redis:6379",
		"redis://app:s3cret@h:6379/1?dial_timeout=2s",
		"rediss://:pw@h:6380",
		"redis://app:pw@s1:26379/0?master_name=m&addr=s2:26379&sentinel_username=u&sentinel_password=spw",
		"redis://u:pw@seed:6379?cluster=true",
		"a:1,b:2?master=m",
		"unix://:pw@/run/redis.sock?db=1",
		"redis://u:p%zz@h",
		"redis://u:p/w@h:1?x=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddress(s)
		shown := ""
		if err != nil {
			shown = err.Error()
		} else {
			shown = a.String()
		}
		for _, secret := range secrets(s) {
			if len(secret) >= 4 && strings.Count(s, secret) == 1 && strings.Contains(shown, secret) {
				t.Fatalf("ParseAddress(%q) shows the password %q: %s", s, secret, shown)
			}
		}
	})
}

// secrets returns the passwords that s, read as a URL, holds.
func secrets(s string) []string {
	var out []string
	if u, err := url.Parse(s); err == nil {
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
		if q, err := url.ParseQuery(u.RawQuery); err == nil {
			for k, vs := range q {
				if strings.Contains(strings.ToLower(k), "pass") {
					out = append(out, vs...)
				}
			}
		}
	}
	return out
}
