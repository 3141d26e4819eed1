package redis

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// Kind is the kind of Redis deployment an Address names.
type Kind int

const (
	// Single is one Redis server, or a proxy that looks like one.
	Single Kind = iota
	// Sentinel is a master found through Redis Sentinel.
	Sentinel
	// Cluster is a Redis Cluster, reached through one seed or many.
	Cluster
)

// String names the kind: "single", "sentinel" or "cluster".
func (k Kind) String() string {
	switch k {
	case Sentinel:
		return "sentinel"
	case Cluster:
		return "cluster"
	}
	return "single"
}

// Address is a parsed Config.URL: the kind of deployment and how to reach
// it. Validation (the config package) and Open share it, so an address that
// passes the one never fails at the other. An Address is immutable.
type Address struct {
	// Kind is the deployment the address names.
	Kind Kind

	redacted string
	set      map[string]bool // query parameters the address gave
	single   *goredis.Options
	failover *goredis.FailoverOptions
	cluster  *goredis.ClusterOptions
}

// AddressError is an address that ParseAddress refuses. Its message never
// holds a password: Address is the address with every password replaced.
type AddressError struct {
	Address string // the address, passwords replaced by "xxxxx"
	Problem string // what is wrong
}

// Error returns "backplane/redis: address <redacted>: <problem>".
func (e *AddressError) Error() string {
	return fmt.Sprintf("backplane/redis: address %q: %s", e.Address, e.Problem)
}

// Parameters that the address understands itself, beside go-redis's own.
const (
	paramCluster          = "cluster"           // true: a Cluster, even through one seed
	paramMasterName       = "master_name"       // a Sentinel group's master
	paramSentinelUsername = "sentinel_username" // the sentinels' ACL user
	paramSentinelPassword = "sentinel_password" // the sentinels' password
)

// refused are go-redis parameters the backplane cannot work with, and why.
var refused = map[string]string{
	"username":                  "give the user as user:password@ before the host",
	"password":                  "give the password as user:password@ before the host",
	"read_only":                 "the backplane reads from masters only",
	"route_by_latency":          "the backplane reads from masters only",
	"route_randomly":            "the backplane reads from masters only",
	"replica_only":              "the backplane reads from masters only",
	"use_disconnected_replicas": "the backplane reads from masters only",
}

// ParseAddress parses the address forms of Config.URL:
//
//	host:port                                   one Redis
//	redis://user:password@host:port/db          one Redis (rediss:// for TLS)
//	unix://user:password@/path/redis.sock?db=N  one Redis on a Unix socket
//	redis://user:password@s1:26379/db?master_name=M&addr=s2:26379&addr=s3:26379
//	    &sentinel_username=U&sentinel_password=P
//	                                            Sentinel: the sentinels, then the
//	                                            master's name; user and password
//	                                            are the master's
//	redis://user:password@seed:6379?cluster=true
//	                                            Cluster through one seed, such as
//	                                            a managed configuration endpoint
//	redis://user:password@n1:6379?addr=n2:6379  Cluster through several seeds
//	h1:p1,h2:p2,h3:p3                           Cluster (shorthand)
//	s1:p1,s2:p2?master=M                        Sentinel without auth (shorthand)
//
// The query may also hold go-redis's own options (dial_timeout, read_timeout,
// write_timeout, max_retries, pool_size, ...), which Open respects; an
// unknown parameter is an error. Errors are *AddressError.
func ParseAddress(s string) (*Address, error) {
	a := &Address{redacted: redact(s), set: map[string]bool{}}
	fail := func(format string, args ...any) (*Address, error) {
		return nil, &AddressError{Address: a.redacted, Problem: fmt.Sprintf(format, args...)}
	}
	if s == "" {
		return fail("empty")
	}
	raw := s
	if !strings.Contains(s, "://") {
		u, problem := fromHostList(s)
		if problem != "" {
			return fail("%s", problem)
		}
		raw = u
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fail("%s", urlProblem(err))
	}
	switch {
	case u.Scheme == "unix":
		if u.Host != "" || u.Path == "" {
			return fail("want unix:///path/to/redis.sock")
		}
	case u.Scheme != "redis" && u.Scheme != "rediss":
		return fail("scheme %q: want redis://, rediss:// or unix:// (Sentinel and Cluster are redis:// with master_name= or cluster=true)", u.Scheme)
	case u.Opaque != "" || u.Hostname() == "":
		return fail("no host: want redis://host:port")
	case !validHost(u.Hostname()):
		return fail("bad host: want a host name or IP address")
	case u.Port() != "" && !validPort(u.Port()):
		return fail("port %q: want 1-65535", u.Port())
	}
	if u.Fragment != "" {
		return fail("a URL fragment (#...) is not allowed")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return fail("bad query: %s", urlProblem(err))
	}
	for k := range q {
		if why, ok := refused[k]; ok {
			return fail("parameter %s is not allowed: %s", k, why)
		}
		a.set[k] = true
	}
	for _, addr := range q["addr"] {
		h, p, err := net.SplitHostPort(addr)
		if err != nil || !validHost(h) || !validPort(p) {
			return fail("addr %q: want host:port", addr)
		}
	}

	clusterMode := false
	if vs, ok := q[paramCluster]; ok {
		v, err := strconv.ParseBool(vs[len(vs)-1])
		if err != nil {
			return fail("cluster=%q: want true or false", vs[len(vs)-1])
		}
		clusterMode = v
		q.Del(paramCluster)
	}
	sentinelUser, sentinelPass := q.Get(paramSentinelUsername), q.Get(paramSentinelPassword)
	_, hasSentinelCreds := q[paramSentinelUsername]
	if _, ok := q[paramSentinelPassword]; ok {
		hasSentinelCreds = true
	}
	q.Del(paramSentinelUsername)
	q.Del(paramSentinelPassword)

	switch {
	case q.Has(paramMasterName):
		a.Kind = Sentinel
	case clusterMode || q.Has("addr"):
		a.Kind = Cluster
	}
	switch {
	case u.Scheme == "unix" && a.Kind != Single:
		return fail("a unix:// address names one Redis: master_name, addr and cluster are not allowed")
	case a.Kind == Sentinel && clusterMode:
		return fail("master_name (Sentinel) and cluster=true (Cluster) exclude each other")
	case a.Kind == Sentinel && q.Get(paramMasterName) == "":
		return fail("master_name is empty")
	case a.Kind != Sentinel && hasSentinelCreds:
		return fail("sentinel_username and sentinel_password need master_name (Sentinel)")
	case a.Kind == Cluster && strings.Trim(u.Path, "/") != "" && strings.Trim(u.Path, "/") != "0":
		return fail("Redis Cluster has database 0 only, got path %q", u.Path)
	case a.Kind == Cluster && q.Has("db"):
		return fail("Redis Cluster has database 0 only: db is not allowed")
	}

	g := *u // the URL as go-redis reads it
	g.RawQuery = q.Encode()
	switch a.Kind {
	case Single:
		a.single, err = goredis.ParseURL(g.String())
	case Sentinel:
		// go-redis takes the URL's user for the sentinels'; here it is the
		// master's, as in every other form.
		g.User = nil
		a.failover, err = goredis.ParseFailoverURL(g.String())
		if err == nil {
			a.failover.Username, a.failover.Password = userPassword(u)
			a.failover.SentinelUsername, a.failover.SentinelPassword = sentinelUser, sentinelPass
		}
	case Cluster:
		g.Path = ""
		a.cluster, err = goredis.ParseClusterURL(g.String())
	}
	if err != nil {
		return fail("%s", goRedisProblem(err, a.Kind))
	}
	return a, nil
}

// String returns the address with every password replaced by "xxxxx".
func (a *Address) String() string { return a.redacted }

// TLS reports whether the address asks for TLS (rediss://).
func (a *Address) TLS() bool { return a.tlsConfig() != nil }

// tlsConfig is the TLS configuration the address asks for, or nil.
func (a *Address) tlsConfig() *tls.Config {
	switch {
	case a.single != nil:
		return a.single.TLSConfig
	case a.failover != nil:
		return a.failover.TLSConfig
	case a.cluster != nil:
		return a.cluster.TLSConfig
	}
	return nil
}

// fromHostList turns the shorthand "h1:p1,h2:p2[?master=name]" into the URL
// form, or says what is wrong with it.
func fromHostList(s string) (string, string) {
	hosts, query, hasQuery := strings.Cut(s, "?")
	var master string
	if hasQuery {
		q, err := url.ParseQuery(query)
		if err != nil {
			return "", "bad query: " + urlProblem(err)
		}
		for k := range q {
			if k != "master" {
				return "", fmt.Sprintf("parameter %s: a host:port list takes only ?master=name; use the redis:// form for credentials and options", k)
			}
		}
		if master = q.Get("master"); master == "" {
			return "", "master is empty"
		}
	}
	list := strings.Split(hosts, ",")
	for _, h := range list {
		host, port, err := net.SplitHostPort(h)
		if err != nil || !validHost(host) || !validPort(port) {
			return "", fmt.Sprintf("%q: want host:port", h)
		}
	}
	v := url.Values{}
	for _, h := range list[1:] {
		v.Add("addr", h)
	}
	switch {
	case master != "":
		v.Set(paramMasterName, master)
	case len(list) > 1:
		v.Set(paramCluster, "true")
	}
	u := url.URL{Scheme: "redis", Host: list[0], RawQuery: v.Encode()}
	return u.String(), ""
}

// validHost reports whether h is an IP address or a host name.
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	return h != "" && len(h) <= 253 && !strings.ContainsFunc(h, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '.' || r == '_')
	})
}

func validPort(s string) bool {
	n, err := strconv.ParseUint(s, 10, 16)
	return err == nil && n > 0
}

func userPassword(u *url.URL) (string, string) {
	if u.User == nil {
		return "", ""
	}
	p, _ := u.User.Password()
	return u.User.Username(), p
}

// urlProblem describes a net/url error without quoting any of the URL,
// which may hold a password.
func urlProblem(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ee url.EscapeError
	var ie url.InvalidHostError
	msg := err.Error()
	switch {
	case errors.As(err, &ee):
		return "bad %-escape"
	case errors.As(err, &ie):
		return "bad character in the host"
	case strings.Contains(msg, "userinfo"):
		return "bad user or password: escape reserved characters as %XX"
	case strings.Contains(msg, "port"):
		return "bad port, or a / ? # @ in the password that is not escaped as %XX"
	}
	return "not a valid URL"
}

// goRedisProblem rewords an error of go-redis's URL parsers. They quote
// parameter values but never the user or password.
func goRedisProblem(err error, k Kind) string {
	msg := strings.TrimPrefix(err.Error(), "redis: ")
	if rest, ok := strings.CutPrefix(msg, "unexpected option: "); ok {
		return fmt.Sprintf("unknown parameter %s for a %s address (see the Redis deployments table in the README)", rest, k)
	}
	return msg
}

// redact returns s with the password of its user info, and the value of
// every query parameter whose name mentions a password, replaced by
// "xxxxx". It works on text that is not a valid URL as well, erring
// towards hiding too much.
func redact(s string) string {
	const x = "xxxxx"
	prefix, after := "", s
	if i := strings.Index(s, "://"); i >= 0 {
		prefix, after = s[:i+3], s[i+3:]
	}
	if at := strings.LastIndex(after, "@"); at >= 0 {
		user := after[:at]
		name, _, hasPass := strings.Cut(user, ":")
		switch {
		case prefix == "" || strings.ContainsAny(name, "/?#&="):
			user = x // not plainly a user name: hide it all
		case hasPass:
			user = name + ":" + x
		}
		prefix += user + "@"
		after = after[at+1:]
	}
	if base, query, ok := strings.Cut(after, "?"); ok {
		after = base + "?" + redactQuery(query)
	}
	return prefix + after
}

// redactQuery hides the value of every parameter whose name mentions a
// password.
func redactQuery(query string) string {
	const x = "xxxxx"
	parts := strings.Split(query, "&")
	for i, p := range parts {
		k, _, hasValue := strings.Cut(p, "=")
		name, err := url.QueryUnescape(k)
		switch {
		case err != nil && strings.Contains(strings.ToLower(p), "pass"):
			parts[i] = x
		case hasValue && strings.Contains(strings.ToLower(name), "pass"):
			parts[i] = k + "=" + x
		}
	}
	return strings.Join(parts, "&")
}
