// Package federation lets remote, untrusted operators run regional nodes
// for a home fleet: rooms created by players of a country with an approved
// node are played on that node, while accounts, friends and matchmaking
// stay at home, and a joiner always goes to the room, wherever it is.
//
// # Parts
//
// Home runs at home. It keeps the register of nodes and their servers in
// backplane records (Redis in production, memory for development) and
// serves, through Handler, the doors a node uses — join, announce,
// self-test and room reports — the public regions list, and an admin API.
// The same admin operations are Go methods (CreateNode, Approve,
// RevokeNode, RevokeServer, Nodes), which cmd/muster-home wraps as a CLI.
//
// Node is the agent beside each server of a regional node. It enrols once
// with the node key and keeps the server key it is given in a 0600 file,
// announces its services (ServiceGame or the seed's ServicePhoton,
// ServiceTURN, ServiceSTUN) and a hardware report every minute (retrying
// failures with jittered backoff), uploads the bandwidth self-test when
// home says it is due, and reports each room's whole state on every
// change.
//
// Placer runs at home beside the matchmaking: it polls the regions list
// once a minute, looks players' countries up in the background at sign-in
// (CountryResolver), and answers where a room is played (Place) and which
// STUN/TURN servers a player gets (ICEServers).
//
// TURNCredentials mints coturn use-auth-secret credentials; MintToken and
// ParseToken are the game-server tokens home mints and nodes check.
//
// On a node, a Muster game server plugs in through two room interfaces:
// TokenChecker is a room.TicketChecker that admits players with home's
// tokens (each redeemed once) and, as a module of the same host, seats
// each in the room its token names, opened with home's id on the first
// arrival; and RoomReporter is a room.RoomWatcher that
// sends every room's full state home through the Node agent, from its own
// goroutine (Run).
//
// # Trust
//
// Keys are 256 random bits, shown once, kept at home only as SHA-256
// hashes and compared in constant time. A node key can only enrol servers;
// a server key can only announce, self-test and report rooms. Every request
// made with a server key is stamped with that server's node: a body naming
// another node is refused (403), and a room belongs to the server that
// reported it first. Unknown and revoked keys get 401, a key at the wrong
// door 403. Only home (the admin token, or the Go methods) creates,
// approves and revokes; revoking one server leaves its siblings working.
// Join and announce are rate-limited per key and per address, on the
// backplane's counters when it has them and in memory otherwise, and every
// body is size-limited and validated.
//
// # Rotation
//
// A server is fresh while it is not revoked, less than SilentAfter (3m)
// has passed since its last announce, and its self-test has not been due
// for more than SelfTestGrace (1h). A node is in rotation — listed by GET
// /api/v1/regions — while it is approved, not revoked, and has at least
// one fresh server. A new server's first self-test is due when it joins;
// a passed test makes the next due SelfTestEvery (24h) later, a failed one
// leaves it due. So a server silent for 3 minutes, or one that has not
// passed a self-test for 25 hours, takes its node out of rotation unless a
// sibling is fresh; placers stop placing rooms there at their next poll,
// and rooms already there keep going, with their reports still accepted.
//
// Rooms: only a server of an approved node that has announced within
// ReapAfter (1h) may report rooms, at most MaxRoomsPerServer (1000) open
// rooms each and MaxReportBytes (16 KiB) a report; anything else is
// refused with a 4xx. Home keeps the latest snapshot per room, ordered by
// a sequence number the agent stamps; an older snapshot arriving late is
// ignored. Each server's rooms and players are counted as its reports are
// stored, so the regions list reads one small record per server, never the
// reports. A room ends when its server says so, or with its server: once
// the server or its node is revoked, or the server has been silent for
// ReapAfter (the bound after which an abandoned room is reaped), Room no
// longer returns its rooms, and the next regions list forgets them. A closed room is kept as a marker for
// SilentAfter to twice that. An agent that restarts announces a new epoch
// and its earlier rooms are forgotten.
//
// # Several homes
//
// Any number of Home values on one Redis serve one register: every write
// is a compare-and-set over the records it depends on
// (backplane.RecordSwapper, one Lua script on Redis), retried when another
// home changed one of them meanwhile. So an approve racing a revoke cannot
// bring a revoked node back, the per-node server limit holds across homes,
// the newer of two racing room reports wins, and a report racing its
// server's revocation leaves no room behind. On a backplane without
// RecordSwapper the same holds within one process only.
//
// # Lifecycle and concurrency
//
// NewHome, NewNode and NewPlacer start nothing. Home has no goroutines of
// its own and needs no Close: it serves requests on the caller's HTTP
// server. Node.Run and Placer.Run own every goroutine they start and
// return only when all have ended, after their context is done. All three
// types are safe for concurrent use.
package federation
