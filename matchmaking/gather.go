package matchmaking

import (
	"cmp"
	"slices"

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
	type scored struct {
		node  fleet.Node
		score uint64
	}
	ranked := make([]scored, 0, len(nodes))
	for _, n := range nodes {
		if n.HasRoom() && n.ID != exclude {
			ranked = append(ranked, scored{n, rendezvous(playlist, n.ID)})
		}
	}
	slices.SortFunc(ranked, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.node.ID, b.node.ID)
	})
	out := make([]fleet.Node, len(ranked))
	for i, s := range ranked {
		out[i] = s.node
	}
	return out
}

// rendezvous scores the pair (key, node): FNV-1a over key, a zero byte
// and node, finished with the splitmix64 mixer so that similar node ids
// ("s1", "s2") score independently.
func rendezvous(key, node string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * prime
	}
	h *= prime // the separator byte 0
	for i := 0; i < len(node); i++ {
		h = (h ^ uint64(node[i])) * prime
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
