// Package fleet is the part of a game server that makes it one of many: it
// publishes the server's record every heartbeat, keeps a view of the live
// servers of its cluster, claims the units the server runs (players, lobby
// codes) so any server can locate them, writes and takes handoffs for
// players it moves, and carries the server's state, capacity and drain.
//
// # Lifecycle
//
// New checks the configuration and starts nothing. Run publishes the
// record and refreshes the view every heartbeat until its context ends or
// the server has left the fleet (the end of a drain); it returns only when
// every goroutine the Fleet started has ended. MarkReady moves a starting
// server to ready; Drain hands the server's work to others (through the
// Drainers added with AddDrainer; a LastDrainer's last part runs once all
// of them are done), then leaves.
//
// # Outage
//
// Start-up never waits for the backplane, and every backplane call has a
// short deadline. One failed heartbeat changes nothing: the others stay in
// view until their records expire. Only when the failures span the ttl
// (MissedHeartbeats heartbeats) does the server serve alone: the others
// have dropped out of its view and nothing is moved. The outage is logged
// once. A server that never reached the backplane says "detached" on its
// readiness probe.
//
// Every heartbeat that reaches the backplane is followed by one batched
// re-assertion of every claim the server holds (backplane Reassert): it
// writes back claims the store lost (a restart, or a failover that dropped
// writes) and renews their lease. A claim is leased to its holder's
// liveness, so one whose release was lost stops pointing anywhere within a
// ttl. A claim another server took meanwhile is left to it and reported to
// the OnClaimLost function.
//
// # Releasing from a worker
//
// ReleaseLater gives claims up without I/O on the caller: a goroutine that
// Run owns writes the queued releases, all of them in one round trip, and
// retries those that fail; leaving writes what is still queued.
//
// # Records
//
// With Config.Key set (the security key), each record is signed, and a
// record not signed with the key is dropped from the view and counted
// (RejectedRecords): only a server holding the key can join the view. A
// second server started with a node id in use stops with ErrDuplicateID.
//
// # Alone
//
// With no other live server in view — one server, or the in-memory
// backplane — Alone reports true and the packages built on the fleet make
// every decision locally: no redirect, relay or handoff.
//
// # Claims and round trips
//
// Every call that reaches the backplane is one round trip: Claim and
// Release take any number of ids (room.Host claims a room's players
// together), and Arrive locates an arriving player and takes its handoff
// at once. A call's deadline is the same whatever its size, so claims are
// written, re-asserted and released 1,000 at a time: a heartbeat of a
// server holding 20,000 claims renews them in 20 round trips, each with
// its own deadline, where one call gave up on a busy machine. Locate and
// Arrive judge whether a claim's holder is live by the view, so a lookup
// is one plain read; a server that leaves releases its claims first, so
// that they point nowhere at once.
//
// A Fleet is safe for concurrent use. Nodes, Node and Alone read the view
// kept by the heartbeat and cost no backplane round trip.
package fleet
