package main

import (
	"context"

	"github.com/muster-gg/muster/lobby"
	"github.com/muster-gg/muster/matchmaking"
	"github.com/muster-gg/muster/room"
)

// useModules adds the game's modules to the host: the "duel" playlist (1v1)
// and "squad" (2v2), and lobby codes. It returns their Run functions, to be
// run beside the host.
func useModules(host *room.Host[*Match, Input, *Fighter]) ([]func(context.Context) error, error) {
	mm, err := matchmaking.New(matchmaking.Config{},
		matchmaking.Playlist{Name: "duel"},
		matchmaking.Playlist{Name: "squad", Teams: 2, TeamSize: 2},
	)
	if err != nil {
		return nil, err
	}
	if err := host.Use(mm); err != nil {
		return nil, err
	}
	lb, err := lobby.New(lobby.Config{})
	if err != nil {
		return nil, err
	}
	if err := host.Use(lb); err != nil {
		return nil, err
	}
	return nil, nil // the host runs them
}
