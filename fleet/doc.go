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
// Drainers added with AddDrainer), then leaves.
//
// # Outage
//
// Start-up never waits for the backplane, and every backplane call has a
// short deadline. While the backplane cannot be reached the server serves
// alone: the others drop out of its view and nothing is moved. The outage
// is logged once. When the backplane answers again the server re-asserts
// its record and every claim it holds, also when the store came back empty.
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
// at once. Locate and Arrive judge whether a claim's holder is live by the
// view, so a lookup is one plain read; a server that leaves releases its
// claims first, so that they point nowhere at once.
//
// A Fleet is safe for concurrent use. Nodes, Node and Alone read the view
// kept by the heartbeat and cost no backplane round trip.
package fleet
