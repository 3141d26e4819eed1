package muster

import (
	"crypto/rand"
	"net"
	"os"
	"strings"

	"github.com/muster-gg/muster/config"
)

// nodeID returns muster.server.fleet.node-id, or else a new id made of the
// host name and a random suffix. New calls it once per server.
func nodeID(c config.Config) string {
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

// machineIP returns the first non-loopback IPv4 address of the machine, or
// 127.0.0.1 when it has none: the {ip} of
// muster.server.fleet.internal-address.
func machineIP() string {
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
