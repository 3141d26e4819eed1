package fleet

import (
	"cmp"
	"slices"
)

// Rendezvous scores the pair (key, node id) for rendezvous hashing: FNV-1a
// over key, a zero byte and the id, finished with the splitmix64 mixer so
// that similar ids ("s1", "s2") score independently.
func Rendezvous(key, nodeID string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * prime
	}
	h *= prime // the separator byte 0
	for i := 0; i < len(nodeID); i++ {
		h = (h ^ uint64(nodeID[i])) * prime
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// Ranked returns the nodes for which keep is true (all when keep is nil),
// ordered by rendezvous hashing of key: every server computes the same
// order from the same view, and a node joining or leaving moves only the
// keys it wins or held.
func Ranked(key string, nodes []Node, keep func(Node) bool) []Node {
	type scored struct {
		node  Node
		score uint64
	}
	ranked := make([]scored, 0, len(nodes))
	for _, n := range nodes {
		if keep == nil || keep(n) {
			ranked = append(ranked, scored{n, Rendezvous(key, n.ID)})
		}
	}
	slices.SortFunc(ranked, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.node.ID, b.node.ID)
	})
	out := make([]Node, len(ranked))
	for i, s := range ranked {
		out[i] = s.node
	}
	return out
}
