package relay

// Stats is a snapshot of a Relay's counters. Counters only grow, except
// Active.
type Stats struct {
	// Active is the number of relayed connections open now.
	Active int64
	// Relayed counts the connections relayed to another node.
	Relayed uint64
	// Fallbacks counts relay attempts served locally because the target
	// node could not be reached or failed the handshake (no answer within
	// DialTimeout, or an answer other than 101 and 4xx).
	Fallbacks uint64
	// Refused counts relay attempts the target node refused with a 4xx
	// answer to the client's request (403 for an Origin it does not
	// accept, 429 for an address over its connection limit, ...): that
	// answer was passed on to the client, which is no failure of the node.
	Refused uint64
	// OverOpen counts relay attempts answered 429 here, before any dial:
	// the client's address held its cap of open connections on this
	// server (see LimitOpen).
	OverOpen uint64
	// BytesToNode and BytesToClient count the message payload bytes
	// relayed from clients to target nodes and back.
	BytesToNode, BytesToClient uint64
	// Verified counts incoming requests whose relay signature was valid;
	// Rejected counts those that carried a relay signature (a
	// Muster-Relay-Signature header) that was not: forged, stale, replayed
	// or made for another node. Other relay headers without a signature
	// are stripped and not counted.
	Verified, Rejected uint64
}

// Stats returns a snapshot of the relay's counters.
func (rl *Relay) Stats() Stats {
	return Stats{
		Active:        rl.active.Load(),
		Relayed:       rl.relayed.Load(),
		Fallbacks:     rl.fallbacks.Load(),
		Refused:       rl.refused.Load(),
		OverOpen:      rl.overOpen.Load(),
		BytesToNode:   rl.bytesToNode.Load(),
		BytesToClient: rl.bytesToClient.Load(),
		Verified:      rl.verified.Load(),
		Rejected:      rl.rejected.Load(),
	}
}
