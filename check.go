package muster

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/baseurl"
	"github.com/muster-gg/muster/lobby"
	"github.com/muster-gg/muster/room"
)

// CheckConfig reports the first bad setting of cfg as a *config.Error that
// names its key and variable: first the settings that only the packages
// cfg configures can decide (the Redis address and TLS files, the names of
// the cluster and of the node, the room host's and lobby's bounds, the
// federation home's URL), then cfg.Validate's rules. New runs it, and so
// does muster config check (through LoadConfigFile), so that the two
// agree.
func CheckConfig(cfg config.Config) error {
	if err := checkPackages(cfg); err != nil {
		return err
	}
	return cfg.Validate()
}

// checkPackages is CheckConfig without Validate: the Check that LoadConfig
// gives config.Load, which runs Validate after it.
func checkPackages(cfg config.Config) error {
	for _, check := range []func(config.Config) error{checkRedis, checkNames, checkRoom, checkLobby, checkFederation} {
		if err := check(cfg); err != nil {
			return err
		}
	}
	return nil
}

// invalid is the *config.Error of a bad value of muster.<key>.
func invalid(key, format string, args ...any) error {
	return config.Invalid("muster."+key, fmt.Sprintf(format, args...))
}

// quote quotes a value for a message, with any URL password hidden.
func quote(s string) string { return strconv.Quote(config.RedactURL(s)) }

// checkRedis checks muster.server.fleet.redis and its TLS files with the
// parser and file checks that the backplane opens them with, so that a
// configuration that passes never fails at start-up. No password is
// echoed.
func checkRedis(cfg config.Config) error {
	if cfg.Server.Fleet.Redis == "" {
		return nil // Validate refuses a TLS file given without it
	}
	err := redisConfig(cfg).Check()
	var ae *redis.AddressError
	var fe *redis.TLSFileError
	switch {
	case errors.As(err, &ae):
		return invalid("server.fleet.redis", "%s; got %s", ae.Problem, strconv.Quote(ae.Address))
	case errors.As(err, &fe):
		key := map[string]string{"TLSCAFile": "redis-tls-ca-file", "TLSCertFile": "redis-tls-cert-file", "TLSKeyFile": "redis-tls-key-file"}[fe.Field]
		return invalid("server.fleet."+key, "%v, file %s", fe.Err, strconv.Quote(fe.Path))
	case err != nil:
		return invalid("server.fleet.redis", "%v", err)
	}
	return nil
}

// checkNames checks the cluster's name and the node id with the
// backplane's and the fleet's rules.
func checkNames(cfg config.Config) error {
	f := cfg.Server.Fleet
	switch {
	case backplane.ValidateName("cluster", f.Cluster) != nil:
		return invalid("server.fleet.cluster", "want a name of 1-256 bytes without { } : or NUL, got %s", quote(f.Cluster))
	case f.NodeID != "" && fleet.ValidateNodeID(f.NodeID) != nil:
		return invalid("server.fleet.node-id", "want a name of at most 256 bytes without spaces, control characters, { } : or NUL, got %s", quote(f.NodeID))
	}
	return nil
}

// checkRoom checks muster.room against the room host's bounds and stores.
func checkRoom(cfg config.Config) error {
	r := cfg.Room
	if r.Workers < 0 || r.Workers > room.MaxWorkers {
		return invalid("room.workers", "want 0 (one per CPU) to %d, got %d", room.MaxWorkers, r.Workers)
	}
	for _, err := range []error{
		upTo("room.max-catch-up", "steps", r.MaxCatchUp, room.MaxCatchUpSteps),
		upTo("room.read-limit", "bytes (1 MiB)", r.ReadLimit, room.MaxReadLimit),
		upTo("room.send-queue", "frames", r.SendQueue, room.MaxSendQueue),
	} {
		if err != nil {
			return err
		}
	}
	if s := r.Sockets; s != "" && s != room.SocketsLoop && s != room.SocketsPortable {
		return invalid("room.sockets", "want %s or %s, got %s", room.SocketsLoop, room.SocketsPortable, quote(s))
	}
	if s := r.Limits.Store; s != room.StoreMemory && s != room.StoreBackplane {
		return invalid("room.limits.store", "want memory or backplane, got %s", quote(s))
	}
	return nil
}

// checkLobby checks muster.lobby against the lobby's bounds.
func checkLobby(cfg config.Config) error {
	return upTo("lobby.max-members", "members", cfg.Lobby.MaxMembers, lobby.MaxMembersLimit)
}

// upTo refuses a count v of muster.<key> outside 1-hi; unit names what is
// counted.
func upTo(key, unit string, v int, hi int64) error {
	if v < 1 || int64(v) > hi {
		return invalid(key, "want 1-%d %s, got %d", hi, unit, v)
	}
	return nil
}

// checkFederation checks muster.federation.home-url with the federation's
// rule for a base URL.
func checkFederation(cfg config.Config) error {
	f := cfg.Federation
	if f.HomeURL == "" {
		return nil
	}
	if u, err := url.Parse(f.HomeURL); err != nil || !baseurl.Valid(u) {
		return invalid("federation.home-url", "want an http:// or https:// URL without user, query or fragment, got %s", quote(f.HomeURL))
	}
	return nil
}
