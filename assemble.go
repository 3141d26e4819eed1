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
	r := c.Room
	return room.Config{
		Rate:         r.Rate,
		Workers:      r.Workers,
		MaxCatchUp:   r.MaxCatchUp,
		ReadLimit:    int64(r.ReadLimit),
		SendQueue:    r.SendQueue,
		PingInterval: time.Duration(r.PingInterval),
		HelloTimeout: time.Duration(r.HelloTimeout),
		Secret:       c.Security.Key,
		TicketTTL:    time.Duration(r.TicketTTL),
		MoveCooldown: time.Duration(r.MoveCooldown),
		AwayTimeout:  time.Duration(r.AwayTimeout),
		DrainGrace:   time.Duration(r.DrainGrace),
		Limits: room.Limits{
			Store:    r.Limits.Store,
			Connects: r.Limits.Connects,
			Window:   time.Duration(r.Limits.Window),
			Open:     openCap(r.Limits.Open),
			Failures: r.Limits.Failures,
			Lockout:  time.Duration(r.Limits.Lockout),
			Messages: r.Limits.Messages,
			Burst:    r.Limits.Burst,
		},
	}
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
	l := c.Lobby
	return lobby.Config{
		CodeLength:     l.CodeLength,
		MaxMembers:     l.MaxMembers,
		RoomKind:       l.RoomKind,
		Tick:           time.Duration(l.Tick),
		ArrivalTimeout: time.Duration(l.ArrivalTimeout),
		CodeFailures:   l.CodeFailures,
		CodeLockout:    time.Duration(l.CodeLockout),
	}
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
