package config

import (
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/relay"
)

// NodeID returns muster.server.fleet.node-id, or else a new id made of the
// host name and a random suffix. Call it once per process.
func (c Config) NodeID() string {
	if c.Server.Fleet.NodeID != "" {
		return c.Server.Fleet.NodeID
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "muster"
	}
	host = strings.NewReplacer("{", "-", "}", "-", ":", "-").Replace(host)
	return host + "-" + strings.ToLower(rand.Text()[:6])
}

// MachineIP returns the first non-loopback IPv4 address of the machine, or
// 127.0.0.1 when it has none: the {ip} of internal-address.
func MachineIP() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				return n.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// FleetConfig returns the fleet's configuration for the server nodeID
// whose machine address is ip.
func (c Config) FleetConfig(nodeID, ip string) fleet.Config {
	f := c.Server.Fleet
	return fleet.Config{
		NodeID:          nodeID,
		Cluster:         f.Cluster,
		Region:          f.Region,
		InternalAddress: c.InternalAddress(ip),
		PublicAddress:   c.PublicAddress(nodeID),
		NodeParam:       f.NodeParam,
		Heartbeat:       time.Duration(f.Heartbeat),
		MaxLoad:         c.Server.Capacity.MaxLoad,
		LoadStep:        c.Server.Capacity.LoadStep,
		DrainTimeout:    time.Duration(c.Server.Drain.Timeout),
		DrainToken:      c.Server.Drain.Token,
		Key:             []byte(c.Secret()), // signs the node records
	}
}

// RealIP returns the middleware that finds the client behind the load
// balancers of muster.server.http.trusted-proxies, trusting
// muster.server.http.real-ip-header when it is set (see relay.RealIPHeader).
func (c Config) RealIP() func(http.Handler) http.Handler {
	return relay.RealIPHeader(c.Proxies(), c.Server.HTTP.RealIPHeader)
}

// RelayConfig returns the relay's configuration for the server nodeID.
// With no secret configured, nothing is relayed.
func (c Config) RelayConfig(nodeID string) relay.Config {
	return relay.Config{NodeID: nodeID, NodeParam: c.Server.Fleet.NodeParam, Secret: c.Secret()}
}

// RedisConfig returns the Redis backplane's configuration:
// muster.server.fleet.redis and its redis-tls-* files and redis-timeout.
func (c Config) RedisConfig() redis.Config {
	f := c.Server.Fleet
	return redis.Config{
		URL:         f.Redis,
		Cluster:     f.Cluster,
		Timeout:     time.Duration(f.RedisTimeout),
		TLSCAFile:   f.RedisTLSCAFile,
		TLSCertFile: f.RedisTLSCertFile,
		TLSKeyFile:  f.RedisTLSKeyFile,
	}
}

// OpenBackplane opens the backplane muster.server.fleet.redis names, or an
// in-memory one when it is empty. It does not wait for Redis. The caller
// closes it.
func (c Config) OpenBackplane() (backplane.Backplane, error) {
	if c.Server.Fleet.Redis == "" {
		b, err := memory.NewStore(memory.Config{}).Cluster(c.Server.Fleet.Cluster)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	b, err := redis.Open(c.RedisConfig())
	if err != nil {
		// The client's own errors may quote the URL, password and all.
		msg := strings.ReplaceAll(err.Error(), c.Server.Fleet.Redis, RedactURL(c.Server.Fleet.Redis))
		return nil, fmt.Errorf("config: muster.server.fleet.redis / MUSTER__SERVER__FLEET__REDIS: %s", msg)
	}
	return b, nil
}
