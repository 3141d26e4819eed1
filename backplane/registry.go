package backplane

import (
	"context"
	"time"
)

// Registry is the role of a backplane that keeps the node records: which
// servers of the cluster are live, each record expiring by the store's own
// clock unless its node heartbeats again.
type Registry interface {
	// Heartbeat writes node's record so that it expires ttl after this
	// call, by the store's own clock, and returns the records of every live
	// node of the cluster, node's own included. It is one round trip.
	//
	// created reports that node had no live record before the call: on its
	// first heartbeat, after its record expired, or after the store lost
	// its state (a restarted Redis). A node that sees created on a later
	// heartbeat re-asserts its claims.
	Heartbeat(ctx context.Context, node Node, ttl time.Duration) (nodes []Node, created bool, err error)

	// Nodes returns the records of every live node of the cluster, in no
	// particular order. Its cost grows with the number of nodes in the
	// cluster, never with the size of the store.
	Nodes(ctx context.Context) ([]Node, error)

	// Leave removes node id's record at once. Its claims then point
	// nowhere. Removing an absent node is not an error.
	Leave(ctx context.Context, id string) error
}

// Node is one server's entry in the registry. The backplane treats Data as
// opaque; the fleet package defines what it holds.
type Node struct {
	// ID identifies the node within its cluster.
	ID string
	// Data is the node's encoded record.
	Data []byte
	// TTL, when positive, is how long the record had left to live when
	// the store answered, by the store's clock: a reader may count the
	// node as gone once that long has passed without a newer answer, and
	// so drop a dead node when its record expires rather than at its own
	// next heartbeat after that. Heartbeat reports it at least for every
	// record with less than half the caller's ttl left (its node has
	// missed heartbeats) and may report it for every record. Zero means
	// longer than that, or not reported: Nodes need not report it.
	TTL time.Duration
}
