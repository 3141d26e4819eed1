package main

import (
	"fmt"
	"net/http"
	"time"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/relay"
)

// loadHomeConfig reads muster.federation.home and the trusted proxies
// (muster.server.http.trusted-proxies, real-ip-header) from the file at
// path ("" for none) and the MUSTER__ variables of environ, as a game
// server reads its config.yml: a bad setting is refused naming its key and
// variable. It returns home's config, before the flags are applied, and
// the middleware that restores a client's address behind the proxies.
func loadHomeConfig(path string, environ []string) (federation.HomeConfig, func(http.Handler) http.Handler, error) {
	cfg, err := config.Load(path, environ, muster.DefaultConfig())
	if err != nil {
		return federation.HomeConfig{}, nil, err
	}
	h := cfg.Federation.Home
	d := func(v config.Duration) time.Duration { return time.Duration(v) }
	hc := federation.HomeConfig{
		AdminToken:    h.AdminToken,
		AnnounceEvery: d(h.AnnounceEvery), SilentAfter: d(h.SilentAfter), ReapAfter: d(h.ReapAfter),
		SelfTestEvery: d(h.SelfTestEvery), SelfTestGrace: d(h.SelfTestGrace),
		SelfTestBytes: int64(h.SelfTestBytes), MinBandwidth: h.MinBandwidth,
		MaxBody: int64(h.MaxBody), MaxServersPerNode: h.MaxServersPerNode,
		MaxRoomsPerServer: h.MaxRoomsPerServer, MaxReportBytes: int64(h.MaxReportBytes),
		RegionsCache: d(h.RegionsCache), RequestTimeout: d(h.RequestTimeout),
		Limits: federation.RateLimits{
			Window: d(h.Limits.Window), Join: h.Limits.Join, Announce: h.Limits.Announce,
			Rooms: h.Limits.Rooms, SelfTest: h.Limits.SelfTest, PerIP: h.Limits.PerIP,
		},
		Services: map[string]string{},
	}
	for name, v := range map[string]string{federation.ServiceGame: h.Services.Game, federation.ServiceTURN: h.Services.TURN, federation.ServiceSTUN: h.Services.STUN} {
		if v != "" {
			hc.Services[name] = v
		}
	}
	return hc, relay.RealIPHeader(cfg.Proxies(), cfg.Server.HTTP.RealIPHeader), nil
}

// homeConfigError names where a setting NewHome refuses comes from.
func homeConfigError(err error) error {
	return fmt.Errorf("muster.federation.home (%s__*, or the flags): %w", config.EnvName("muster.federation.home"), err)
}
