package config

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is Muster's configuration: the keys under the root key muster of
// config.yml. Start from a server's defaults (muster.DefaultConfig, the
// packages' own); a zero Config is not valid.
type Config struct {
	// Server configures this game server and its fleet.
	Server Server `yaml:"server"`
	// Room configures the room host.
	Room Room `yaml:"room"`
	// Matchmaking configures the matchmaking module and its playlists.
	Matchmaking Matchmaking `yaml:"matchmaking"`
	// Lobby configures the lobby module.
	Lobby Lobby `yaml:"lobby"`
	// Security holds the server's secrets.
	Security Security `yaml:"security"`
	// Federation makes the server a server of a federation node.
	Federation Federation `yaml:"federation"`

	// warnings are what Load noticed but let pass; see Warnings.
	warnings []string
}

// Warnings returns what Load, Parse or ApplyEnv noticed but let pass, one
// line each, fit to log at start: a MUSTER_ variable with single
// underscores that looks like a setting ("MUSTER_SERVER_HTTP_PORT is
// ignored: did you mean MUSTER__SERVER__HTTP__PORT …"). Nothing secret is
// in them.
func (c Config) Warnings() []string { return c.warnings }

// Server is muster.server.
type Server struct {
	// HTTP is where the server listens.
	HTTP HTTP `yaml:"http"`
	// Capacity is the server's load budget.
	Capacity Capacity `yaml:"capacity"`
	// Drain bounds a drain.
	Drain Drain `yaml:"drain"`
	// Fleet joins the server to a fleet.
	Fleet Fleet `yaml:"fleet"`
}

// HTTP is muster.server.http.
type HTTP struct {
	// Host is the address to listen on; "" listens on every interface.
	// Default "0.0.0.0".
	Host string `yaml:"host"`
	// Port is the port to listen on, 1-65535. Default 8080.
	Port int `yaml:"port"`
	// OperatorPort, when set (1-65535, not Port), is a second port on Host
	// that alone serves the operator's paths: the probes and drain
	// (/muster/server/…), /metrics and the dashboard (/muster/dashboard);
	// Port then answers 404 for them. Set it when Port is exposed
	// directly (a cloud load balancer, a Kubernetes LoadBalancer Service).
	// Default 0: they are served on Port.
	OperatorPort int `yaml:"operator-port"`
	// TrustedProxies lists, comma-separated, the addresses or CIDR ranges
	// of the load balancers in front of the server: a request from one of
	// them is taken to come from the right-most address of its
	// X-Forwarded-For that is not itself a trusted proxy (or from
	// RealIPHeader, when set), so per-client rate limits work behind the
	// load balancer. Default "": every peer is the client.
	TrustedProxies string `yaml:"trusted-proxies"`
	// RealIPHeader names a header, such as X-Real-IP, that every trusted
	// proxy sets to the client's address, replacing any the client sent;
	// when a trusted proxy's request carries it, it names the client.
	// Set it only for such proxies: many pass a client's own X-Real-IP
	// through. Default "": only X-Forwarded-For names the client.
	RealIPHeader string `yaml:"real-ip-header"`
}

// Capacity is muster.server.capacity.
type Capacity struct {
	// MaxLoad is the load budget; a server at MaxLoad is full: it sends new
	// queue entries elsewhere and is not ready for new connections.
	// Default 200.
	MaxLoad int `yaml:"max-load"`
	// LoadStep is how far the load must move before the load the others
	// see changes, so that a record need not be rewritten and read again
	// at every heartbeat (ready or full is always exact, and so is a load
	// of 0 or within a step of MaxLoad). Default 0: MaxLoad/20, at least 1;
	// -1 publishes the exact load.
	LoadStep int `yaml:"load-step"`
}

// Drain is muster.server.drain.
type Drain struct {
	// Timeout bounds the wait for a draining server's rooms to end; at the
	// timeout they are told and closed. At most 24h. Default 30s
	// (deployments often use 360s).
	Timeout Duration `yaml:"timeout"`
	// Token lets POST /muster/server/drain come from another machine with
	// "Authorization: Bearer <token>". Default "": loopback only.
	Token string `yaml:"token"`
}

// Fleet is muster.server.fleet.
type Fleet struct {
	// Redis locates the shared backplane, in a form redis.ParseAddress
	// accepts: host:port, redis://user:password@host:port/db (rediss:// for
	// TLS), a Sentinel group (redis://...@s1:26379?master_name=M&addr=s2:26379
	// &sentinel_password=P) or a Redis Cluster (redis://...@seed:6379?cluster=true).
	// Default "": an in-memory backplane, a fleet of one.
	Redis string `yaml:"redis"`
	// RedisTLSCAFile is a PEM file of the authorities that sign Redis's
	// certificates, for a rediss:// address. Default "": the system's.
	RedisTLSCAFile string `yaml:"redis-tls-ca-file"`
	// RedisTLSCertFile is a PEM certificate this server shows Redis (mutual
	// TLS), with RedisTLSKeyFile. Default "": none.
	RedisTLSCertFile string `yaml:"redis-tls-cert-file"`
	// RedisTLSKeyFile is the key of RedisTLSCertFile, PEM. Default "".
	RedisTLSKeyFile string `yaml:"redis-tls-key-file"`
	// RedisTimeout bounds dialing Redis and each read and write of a call,
	// unless the address's dial_timeout, read_timeout or write_timeout
	// says otherwise. At most 1m. Default 0.5s.
	RedisTimeout Duration `yaml:"redis-timeout"`
	// Cluster names the fleet; servers with the same name form one fleet.
	// Default "default".
	Cluster string `yaml:"cluster"`
	// Region is published with the heartbeat. Default "".
	Region string `yaml:"region"`
	// Heartbeat is the interval between heartbeats, 100ms to 1m; a server
	// that missed 3 is gone. Default 2s.
	Heartbeat Duration `yaml:"heartbeat"`
	// InternalAddress is the host:port other servers reach this one at; the
	// host may be the placeholder {ip} (see Config.InternalAddress).
	// Default "": the machine address and the HTTP port.
	InternalAddress string `yaml:"internal-address"`
	// PublicAddress is the address clients reach this server at, which may
	// hold the placeholder {node-id} (see Config.PublicAddress). Default "".
	PublicAddress string `yaml:"public-address"`
	// NodeParam is the query parameter that names a server. Default "node".
	NodeParam string `yaml:"node-param"`
	// Secret is the key relay signatures are made with. Default "": the
	// security key (see Config.Secret).
	Secret string `yaml:"secret"`
	// NodeID names this server in the fleet. Default "": generated from the
	// host name and a random suffix at start.
	NodeID string `yaml:"node-id"`
}

// Security is muster.security.
type Security struct {
	// Key is the server's security key. Default "".
	Key string `yaml:"key"`
}

// Secret returns the relay signature key: muster.server.fleet.secret, or
// else muster.security.key. "" means nothing is relayed.
func (c Config) Secret() string {
	if c.Server.Fleet.Secret != "" {
		return c.Server.Fleet.Secret
	}
	return c.Security.Key
}

// InternalAddress returns the address other servers reach this one at,
// given the machine's IP address: muster.server.fleet.internal-address with
// {ip} replaced by ip, or ip and the HTTP port when it is empty.
func (c Config) InternalAddress(ip string) string {
	a := c.Server.Fleet.InternalAddress
	if a == "" {
		return net.JoinHostPort(ip, strconv.Itoa(c.Server.HTTP.Port))
	}
	if host, port, err := net.SplitHostPort(a); err == nil && host == "{ip}" {
		return net.JoinHostPort(ip, port) // brackets an IPv6 ip
	}
	return a
}

// Addr returns the address to listen on: muster.server.http.host and
// port, such as "0.0.0.0:8080".
func (c Config) Addr() string {
	return net.JoinHostPort(c.Server.HTTP.Host, strconv.Itoa(c.Server.HTTP.Port))
}

// OperatorAddr returns the address of the operator's port:
// muster.server.http.host and operator-port, such as "0.0.0.0:9090"; ""
// when operator-port is 0.
func (c Config) OperatorAddr() string {
	if c.Server.HTTP.OperatorPort == 0 {
		return ""
	}
	return net.JoinHostPort(c.Server.HTTP.Host, strconv.Itoa(c.Server.HTTP.OperatorPort))
}

// PublicAddress returns muster.server.fleet.public-address with {node-id}
// replaced by nodeID; "" when none is configured.
func (c Config) PublicAddress(nodeID string) string {
	return strings.ReplaceAll(c.Server.Fleet.PublicAddress, "{node-id}", nodeID)
}

// Duration is a time.Duration written in YAML and the environment as a
// number of seconds (2, 0.5) or a Go duration string ("1500ms", "2s"). It
// marshals as seconds.
type Duration time.Duration

// String formats d as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalYAML writes d as a number of seconds.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).Seconds(), nil }

// UnmarshalYAML reads a number of seconds or a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("config: line %d: %w", n.Line, err)
	}
	*d = v
	return nil
}

func parseDuration(s string) (Duration, error) {
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		ns := math.Round(secs * float64(time.Second))
		if math.IsNaN(ns) || math.Abs(ns) >= math.MaxInt64 {
			return 0, errDuration(s)
		}
		return Duration(ns), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errDuration(s)
	}
	return Duration(d), nil
}

func errDuration(s string) error {
	return fmt.Errorf(`want seconds (2, 0.5) or a duration ("1500ms"), got %s`, quote(s))
}

// Proxies returns muster.server.http.trusted-proxies as prefixes. Validate
// has checked them; a bad entry is left out.
func (c Config) Proxies() []netip.Prefix {
	var out []netip.Prefix
	for _, f := range strings.Split(c.Server.HTTP.TrustedProxies, ",") {
		if p, ok := parseProxy(strings.TrimSpace(f)); ok {
			out = append(out, p)
		}
	}
	return out
}

// parseProxy parses an address or a CIDR range.
func parseProxy(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}
