package matchmaking

import (
	"github.com/muster-gg/muster/fleet"
)

// GatherOrder returns the servers of nodes that may gather playlist, best
// first: the first is where its players wait, the next ones take the
// overflow when it fills, leaves or drains. Only servers that are ready
// and below their max-load (fleet.Node.HasRoom) are listed.
//
// The order is rendezvous hashing of the playlist name with each server's
// id, so every server computes the same order from the same registry, and
// a server joining or leaving moves only the playlists it wins or held.
func GatherOrder(playlist string, nodes []fleet.Node) []fleet.Node {
	return gatherOrder(playlist, nodes, "")
}

// gatherOrder is GatherOrder leaving out the server exclude.
func gatherOrder(playlist string, nodes []fleet.Node, exclude string) []fleet.Node {
	return fleet.Ranked(playlist, nodes, func(n fleet.Node) bool { return n.HasRoom() && n.ID != exclude })
}
