package matchmaking

import (
	"github.com/muster-gg/muster/fleet"
)

// GatherOrder returns the servers of nodes that may gather pl, best
// first: the first is where its players wait, the next ones take the
// overflow when it fills, leaves or drains. Only servers that are ready,
// and whose published load leaves room for one match of pl (Teams ×
// TeamSize players, with the defaults New applies), are listed: the same
// order the module itself uses.
//
// The order is rendezvous hashing of the playlist name with each server's
// id, so every server computes the same order from the same registry, and
// a server joining or leaving moves only the playlists it wins or held.
func GatherOrder(pl Playlist, nodes []fleet.Node) []fleet.Node {
	pl, _ = pl.withDefaults() // fills Teams and TeamSize before it checks
	return gatherOrder(pl.Name, max(1, pl.size()), nodes, "")
}

// gatherOrder is the gather order of playlist among the servers of nodes,
// other than exclude, that are ready with room, by their published load,
// for at least need players: a server with room for fewer than one match
// cannot seat the players sent there, and would only overflow them on.
// Every server applies the same rule to the same view, so they agree. The
// published load moves in steps (fleet.Config.LoadStep) and may lag, so a
// server listed here may still have fewer seats: the exact seat budget of
// step is the guard; this only keeps the order from naming servers known
// to be too full.
func gatherOrder(playlist string, need int, nodes []fleet.Node, exclude string) []fleet.Node {
	return fleet.Ranked(playlist, nodes, func(n fleet.Node) bool {
		return n.ID != exclude && roomFor(n, need)
	})
}

// roomFor reports whether n, by its published state and load, is ready
// with room for need players.
func roomFor(n fleet.Node, need int) bool {
	return n.HasRoom() && n.MaxLoad-n.Load >= need
}

// drainOrder is where a draining server hands the players of q, best
// first: the servers of q's gather order, so that they land where the
// playlist gathers, as every server computes it, and are not forwarded
// again; then, as a last resort, the other servers with any room, where
// they at least wait on a live server, with their waited time, until a
// server has room for a match, rather than be told to leave.
func drainOrder(q *queue, nodes []fleet.Node, self string) []fleet.Node {
	need := q.pl.size()
	order := gatherOrder(q.pl.Name, need, nodes, self)
	for _, n := range gatherOrder(q.pl.Name, 1, nodes, self) {
		if !roomFor(n, need) {
			order = append(order, n)
		}
	}
	return order
}
