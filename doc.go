// Package muster runs a game server in one call: the room host for the
// game, its matchmaking and lobbies, fleet membership (alone on the
// in-memory backplane, or with every server on the same Redis), the relay
// that lets any server pass a client to any other behind a plain load
// balancer, the probes, metrics and dashboard, and the drain on SIGTERM.
//
//	cfg, err := muster.LoadConfig() // ./config.yml if present, then MUSTER__… variables
//	if err != nil {
//		log.Fatal(err)
//	}
//	err = muster.Serve(ctx, MyGame{}, cfg,
//		muster.WithPlaylists(matchmaking.Playlist{Name: "duel"}),
//		muster.WithGuestTickets("/ticket"))
//
// Serve is New followed by Run. New builds everything and starts nothing;
// Run listens, runs the fleet, the host and every module, marks the
// server ready, drains on SIGTERM or SIGINT (a second signal cuts the
// drain short), shuts everything down in order and returns when all of it
// has ended.
//
// The configuration is a config.Config, plain data: DefaultConfig is each
// package's own defaults (the ones config.yml spells out), LoadConfig
// reads ./config.yml and the environment over them, and CheckConfig, which
// New runs too, adds the checks only those packages can make. New
// translates each section into its package's Config and wires the
// backplane, the listeners and the node id from it.
//
// The same configuration runs one server or many: set
// muster.server.fleet.redis and a shared muster.security.key on each.
package muster
