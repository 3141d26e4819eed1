package muster

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/matchmaking"
)

// federated is a server's part in a federation node (muster.federation):
// the node agent that announces the server to home, the checker of home's
// tokens, and the reporter of its rooms.
type federated struct {
	node   *federation.Node
	tokens *federation.TokenChecker
	rooms  *federation.RoomReporter
}

// newFederated builds the federation parts muster.federation asks for, or
// returns nil when its home-url is empty. It starts nothing.
func newFederated(c config.Federation, logger *slog.Logger) (*federated, error) {
	if c.HomeURL == "" {
		return nil, nil
	}
	var services map[string]string
	if c.GameAddress != "" {
		services = map[string]string{federation.ServiceGame: c.GameAddress}
	}
	node, err := federation.NewNode(federation.NodeConfig{
		HomeURL: c.HomeURL, NodeKey: c.NodeKey, KeyFile: c.KeyFile, Name: c.Name,
		Services: services, AnnounceEvery: time.Duration(c.AnnounceEvery),
	}, logger)
	if err != nil {
		return nil, fmt.Errorf("muster.federation (%s__*): %w", config.EnvName("muster.federation"), err)
	}
	tokens, err := federation.NewTokenChecker(federation.TokenCheckerConfig{Secret: []byte(c.TokenSecret), NodeID: c.NodeID})
	if err != nil {
		return nil, fmt.Errorf("muster.federation (%s__*): %w", config.EnvName("muster.federation"), err)
	}
	return &federated{node: node, tokens: tokens, rooms: federation.NewRoomReporter(node, logger)}, nil
}

// run runs the agent and the reporter until ctx ends. An agent that stops
// early (home revoked the server, or the key file cannot be written) is
// logged, and the server goes on serving outside the federation.
func (f *federated) run(ctx context.Context, logger *slog.Logger) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.rooms.Run(ctx) // returns nil when ctx ends
	}()
	if err := f.node.Run(ctx); err != nil {
		logger.Error("federation: the node agent stopped; serving on outside the federation (see muster.federation)", "err", err)
	}
	<-done
	return nil
}

// gameRole reports whether cfg makes the server a game-role federation
// server (muster.federation.role game): it hosts only the rooms home
// places, with no queues or lobbies of its own.
func gameRole(cfg config.Config) bool {
	return cfg.Federation.HomeURL != "" && cfg.Federation.Role == config.FederationRoleGame
}

// checkGameRole refuses playlists given in code to a game-role server
// (CheckConfig refuses those of muster.matchmaking.playlists), and says
// that its lobbies are off.
func checkGameRole(cfg config.Config, playlists []matchmaking.Playlist, lobbies bool, logger *slog.Logger) error {
	if !gameRole(cfg) {
		return nil
	}
	if len(playlists) > 0 {
		return fmt.Errorf("%w: muster.federation.role (%s) is %s: the server hosts only the rooms home places, but WithPlaylists gives it queue %q; set the role to %s, or leave the playlists out",
			config.ErrInvalid, config.EnvName("muster.federation.role"), config.FederationRoleGame, playlists[0].Name, config.FederationRoleFull)
	}
	if lobbies {
		logger.Info("federation: game role (muster.federation.role): WithLobbies is ignored; players enter the rooms home places with home's tokens")
	}
	return nil
}
