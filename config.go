package muster

import (
	"errors"
	"os"

	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/lobby"
	"github.com/muster-gg/muster/matchmaking"
	"github.com/muster-gg/muster/room"
)

// The HTTP server's defaults, muster.server.http's: every interface, port
// 8080.
const (
	defaultHost = "0.0.0.0"
	defaultPort = 8080
)

// DefaultConfig returns the default configuration, the one config.yml
// spells out: each package's own defaults (room.DefaultConfig,
// matchmaking.DefaultConfig, lobby.DefaultConfig, fleet.DefaultConfig,
// redis.DefaultTimeout and federation.DefaultAnnounceEvery), listening on
// 0.0.0.0:8080. It is the base config.Load and config.Parse start from.
func DefaultConfig() config.Config {
	f, m := fleet.DefaultConfig(), matchmaking.DefaultConfig()
	return config.Config{
		Server: config.Server{
			HTTP:     config.HTTP{Host: defaultHost, Port: defaultPort},
			Capacity: config.Capacity{MaxLoad: f.MaxLoad, LoadStep: f.LoadStep},
			Drain:    config.Drain{Timeout: config.Duration(f.DrainTimeout)},
			Fleet: config.Fleet{
				Cluster: f.Cluster, Heartbeat: config.Duration(f.Heartbeat), NodeParam: f.NodeParam,
				RedisTimeout: config.Duration(redis.DefaultTimeout),
			},
		},
		Room:        defaultRoom(),
		Matchmaking: config.Matchmaking{Tick: config.Duration(m.Tick), Hold: config.Duration(m.Hold)},
		Lobby:       defaultLobby(),
		Federation:  config.Federation{AnnounceEvery: config.Duration(federation.DefaultAnnounceEvery), Role: config.FederationRoleFull},
	}
}

// defaultRoom is muster.room of room.DefaultConfig.
func defaultRoom() config.Room {
	var r config.Room
	copyFields(&r, room.DefaultConfig(), "Secret")
	r.Limits.Open = openSetting(r.Limits.Open)
	return r
}

// defaultLobby is muster.lobby of lobby.DefaultConfig.
func defaultLobby() config.Lobby {
	var l config.Lobby
	copyFields(&l, lobby.DefaultConfig())
	return l
}

// LoadConfig reads ./config.yml when there is one, then the MUSTER__
// environment variables, over DefaultConfig, and checks the result with
// CheckConfig: what a server started from its directory uses. An error of
// a setting names its key, its variable and where its value came from.
func LoadConfig() (config.Config, error) {
	path := "config.yml"
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		path = ""
	}
	return LoadConfigFile(path, os.Environ())
}

// LoadConfigFile reads the file at path ("" for none), then the MUSTER__
// variables of environ, over DefaultConfig, and checks the result as
// CheckConfig does, once: an error of a setting names its key, its
// variable and where its value came from.
func LoadConfigFile(path string, environ []string) (config.Config, error) {
	return config.Load(path, environ, DefaultConfig(), checkPackages)
}
