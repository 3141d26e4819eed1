package muster

import (
	"math"
	"net/http"
	"time"

	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/lobby"
	"github.com/muster-gg/muster/matchmaking"
	"github.com/muster-gg/muster/relay"
	"github.com/muster-gg/muster/room"
)

// The translations of a config.Config into the Config of each package a
// Server is built from.

// roomConfig returns the room host's configuration: muster.room, with
// muster.security.key as the ticket key.
func roomConfig(c config.Config) room.Config {
	var r room.Config
	copyFields(&r, c.Room, "Secret")
	r.Secret = c.Security.Key
	r.Limits.Open = openCap(c.Room.Limits.Open)
	return r
}

// openCap is room.Limits.Open for muster.room.limits.open n: n, or
// math.MaxInt (no cap) for 0. openSetting is its inverse.
func openCap(n int) int {
	if n == 0 {
		return math.MaxInt
	}
	return n
}

// openSetting is muster.room.limits.open for room.Limits.Open n.
func openSetting(n int) int {
	if n == math.MaxInt {
		return 0
	}
	return n
}

// matchmakingConfig returns the matchmaking module's configuration and the
// playlists of muster.matchmaking.playlists, for matchmaking.New.
func matchmakingConfig(c config.Config) (matchmaking.Config, []matchmaking.Playlist) {
	m := c.Matchmaking
	var pls []matchmaking.Playlist
	for _, p := range m.Playlists {
		pls = append(pls, matchmaking.Playlist{
			Name: p.Name, Teams: p.Teams, TeamSize: p.TeamSize,
			Rating: matchmaking.RatingRule{Window: p.Rating.Window, Widen: p.Rating.Widen, Max: p.Rating.Max, Default: p.Rating.Default},
		})
	}
	return matchmaking.Config{Tick: time.Duration(m.Tick), Hold: time.Duration(m.Hold)}, pls
}

// lobbyConfig returns the lobby module's configuration: muster.lobby.
func lobbyConfig(c config.Config) lobby.Config {
	var l lobby.Config
	copyFields(&l, c.Lobby)
	return l
}

// fleetConfig returns the fleet's configuration for the server nodeID
// whose machine address is ip.
func fleetConfig(c config.Config, nodeID, ip string) fleet.Config {
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

// relayConfig returns the relay's configuration for the server nodeID.
// With no secret configured, nothing is relayed.
func relayConfig(c config.Config, nodeID string) relay.Config {
	return relay.Config{NodeID: nodeID, NodeParam: c.Server.Fleet.NodeParam, Secret: c.Secret()}
}

// redisConfig returns the Redis backplane's configuration:
// muster.server.fleet.redis and its redis-tls-* files and redis-timeout.
func redisConfig(c config.Config) redis.Config {
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

// realIP returns the middleware that finds the client behind the load
// balancers of muster.server.http.trusted-proxies, trusting
// muster.server.http.real-ip-header when it is set (see relay.RealIPHeader).
func realIP(c config.Config) func(http.Handler) http.Handler {
	return relay.RealIPHeader(c.Proxies(), c.Server.HTTP.RealIPHeader)
}
