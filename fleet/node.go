package fleet

import (
	"encoding/json"
	"maps"
	"slices"
)

// State is a server's place in its lifecycle.
type State string

// The states of a server, in order. A ready server becomes full at its
// max-load and ready again below it.
const (
	StateStarting State = "starting"
	StateReady    State = "ready"
	StateFull     State = "full"
	StateDraining State = "draining"
	StateLeaving  State = "leaving"
)

// Node is one server's record as published with its heartbeat.
type Node struct {
	ID              string           `json:"id"`
	Cluster         string           `json:"cluster,omitempty"`
	Region          string           `json:"region,omitempty"`
	InternalAddress string           `json:"internal,omitempty"`
	PublicAddress   string           `json:"public,omitempty"`
	State           State            `json:"state"`
	Load            int              `json:"load"`
	MaxLoad         int              `json:"max_load"`
	Stats           map[string]int64 `json:"stats,omitempty"`
	// Instance marks the process that wrote the record, so that two
	// servers started with one node id find each other out.
	Instance string `json:"instance,omitempty"`
	// LoadStep says Load is not the server's exact load: it is published
	// in steps of LoadStep (Config.LoadStep), and the exact load, which
	// the server's capacity probe reports, is less than a step from it.
	// 0 when Load is the exact load.
	LoadStep int `json:"load_step,omitempty"`

	// Foreign are the ids of the servers of the cluster whose records
	// this server drops, signed with another security key (Fleet.Foreign;
	// at most 32): non-empty when the fleet is split.
	Foreign []string `json:"foreign,omitempty"`
}

// Stat returns the statistic a module published under name, such as
// "queue:duel", or 0.
func (n Node) Stat(name string) int64 { return n.Stats[name] }

// HasRoom reports whether the server is ready and below its max-load.
func (n Node) HasRoom() bool { return n.State == StateReady && n.Load < n.MaxLoad }

func (n Node) clone() Node {
	n.Stats = maps.Clone(n.Stats)
	n.Foreign = slices.Clone(n.Foreign)
	return n
}

func (n Node) encode() []byte {
	data, _ := json.Marshal(n) // cannot fail: plain fields only
	return data
}

func decodeNode(id string, data []byte) (Node, bool) {
	var n Node
	if err := json.Unmarshal(data, &n); err != nil || n.ID != id {
		return Node{}, false
	}
	return n, true
}
