package main

import "github.com/muster-gg/muster/room"

// useModules adds the game's modules to the host.
func useModules(host *room.Host[*Match, Input, *Fighter]) error {
	return nil
}
