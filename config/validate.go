package config

import (
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Validate reports the first bad setting as an *Error naming its key, by
// the rules that need no other package. The rest (the Redis address, the
// names of the cluster and the node, the room host's and lobby's bounds,
// federation's home URL) are muster.CheckConfig's, which checks them and
// then runs Validate. Load and Parse always run Validate, after the checks
// they are given.
func (c Config) Validate() error {
	h, f := c.Server.HTTP, c.Server.Fleet
	bad := func(key, format string, args ...any) error {
		return origin{}.errorf(ErrInvalid, "muster."+key, format, args...)
	}
	redisErr := c.validateRedisFiles()
	drainErr := positiveUpTo("server.drain.timeout", c.Server.Drain.Timeout, Duration(24*time.Hour))
	switch {
	case h.Host != "" && !validHost(h.Host):
		return bad("server.http.host", "want a host name or IP address, got %s", quote(h.Host))
	case h.Port < 1 || h.Port > 65535:
		return bad("server.http.port", "want a port number 1-65535, got %d", h.Port)
	case h.OperatorPort < 0 || h.OperatorPort > 65535:
		return bad("server.http.operator-port", "want 0 (the operator's paths on muster.server.http.port) or a port number 1-65535, got %d", h.OperatorPort)
	case h.OperatorPort == h.Port:
		return bad("server.http.operator-port", "want a port other than muster.server.http.port (%d), or 0 to serve the operator's paths on it", h.Port)
	case !validProxies(h.TrustedProxies):
		return bad("server.http.trusted-proxies", "want comma-separated IP addresses or CIDR ranges, got %s", quote(h.TrustedProxies))
	case !validHeaderName(h.RealIPHeader):
		return bad("server.http.real-ip-header", "want a header name such as X-Real-IP, or \"\", got %s", quote(h.RealIPHeader))
	case c.Server.Capacity.MaxLoad < 1:
		return bad("server.capacity.max-load", "want a positive integer, got %d", c.Server.Capacity.MaxLoad)
	case c.Server.Capacity.LoadStep < -1:
		return bad("server.capacity.load-step", "want 0 (max-load/20), -1 (exact) or a positive step, got %d", c.Server.Capacity.LoadStep)
	case drainErr != nil:
		return drainErr
	case redisErr != nil:
		return redisErr
	case f.Heartbeat < Duration(100*time.Millisecond) || f.Heartbeat > Duration(time.Minute):
		// A server is gone after 3 missed heartbeats: a minute's
		// heartbeat takes 3 minutes to notice a dead one.
		return bad("server.fleet.heartbeat", "want 100ms to 1m, got %s", f.Heartbeat)
	case f.InternalAddress != "" && !validInternal(f.InternalAddress):
		return bad("server.fleet.internal-address", "want host:port or {ip}:port, got %s", quote(f.InternalAddress))
	case !validPublic(f.PublicAddress):
		return bad("server.fleet.public-address", "want an address or URL, which may hold {node-id}, got %s", quote(f.PublicAddress))
	case f.NodeParam == "" || strings.ContainsFunc(f.NodeParam, notUnreserved):
		return bad("server.fleet.node-param", "want a query parameter name of letters, digits and - . _ ~, got %s", quote(f.NodeParam))
	}
	if err := c.validateKeys(); err != nil {
		return err
	}
	if err := c.validateSections(); err != nil {
		return err
	}
	return c.validateFederation()
}

// MinKeyLen is the shortest security key (and relay secret) a server
// accepts, in bytes: the relay's own minimum.
const MinKeyLen = 16

// validateKeys checks the secrets. A fleet needs the security key: without
// it each server would sign tickets and relayed requests with a key of its
// own, and no server could check another's. A key is never echoed.
func (c Config) validateKeys() error {
	bad := func(key, format string, args ...any) error {
		return origin{}.errorf(ErrInvalid, "muster."+key, format, args...)
	}
	k, s := c.Security.Key, c.Server.Fleet.Secret
	switch {
	case k == "" && c.Server.Fleet.Redis != "":
		return bad("security.key", "a fleet (muster.server.fleet.redis is set) needs a security key of at least %d bytes, the same on every server", MinKeyLen)
	case k != "" && len(k) < MinKeyLen:
		return bad("security.key", "want at least %d bytes, got %d", MinKeyLen, len(k))
	case s != "" && len(s) < MinKeyLen:
		return bad("server.fleet.secret", "want at least %d bytes, got %d", MinKeyLen, len(s))
	}
	return nil
}

// quote quotes a value for a message, with any URL password hidden.
func quote(s string) string { return strconv.Quote(RedactURL(s)) }

// validHost reports whether h is an IP address or a host name.
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	return h != "" && len(h) <= 253 && !strings.ContainsFunc(h, func(r rune) bool {
		return notUnreserved(r) || r == '~'
	})
}

func validPort(s string) bool {
	n, err := strconv.ParseUint(s, 10, 16)
	return err == nil && n > 0
}

func validInternal(s string) bool {
	host, port, err := net.SplitHostPort(s)
	return err == nil && (host == "{ip}" || validHost(host)) && validPort(port)
}

// validateRedisFiles checks muster.server.fleet.redis-timeout, and that
// no redis-tls-* file is given without muster.server.fleet.redis. The
// address and the files themselves are checked by muster.CheckConfig, with
// the parser and file checks that the backplane opens them with.
func (c Config) validateRedisFiles() error {
	f := c.Server.Fleet
	if err := positiveUpTo("server.fleet.redis-timeout", f.RedisTimeout, Duration(time.Minute)); err != nil {
		return err
	}
	if f.Redis != "" {
		return nil
	}
	for key, file := range map[string]string{
		"redis-tls-ca-file": f.RedisTLSCAFile, "redis-tls-cert-file": f.RedisTLSCertFile, "redis-tls-key-file": f.RedisTLSKeyFile,
	} {
		if file != "" {
			return origin{}.errorf(ErrInvalid, "muster.server.fleet."+key, "given, but muster.server.fleet.redis is empty (an in-memory backplane)")
		}
	}
	return nil
}

// validPublic accepts "" or an address or URL with no space, control
// character or brace other than the {node-id} placeholder.
func validPublic(s string) bool {
	s = strings.ReplaceAll(s, "{node-id}", "n")
	if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '{' || r == '}' }) {
		return false
	}
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		return err == nil && u.Host != ""
	}
	return true
}

// notUnreserved reports whether r may not appear unescaped in a URL
// (RFC 3986 unreserved characters: letters, digits, - . _ ~).
func notUnreserved(r rune) bool {
	return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-._~", r))
}

// validHeaderName reports whether s is "" or an HTTP header name made of
// letters, digits and dashes.
func validHeaderName(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

func validProxies(s string) bool {
	if strings.TrimSpace(s) == "" {
		return true
	}
	for _, f := range strings.Split(s, ",") {
		if _, ok := parseProxy(strings.TrimSpace(f)); !ok {
			return false
		}
	}
	return true
}
