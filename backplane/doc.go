// Package backplane defines the shared store through which the servers of one
// fleet see each other, and ships its in-memory implementation (subpackage
// memory) and a Redis implementation (subpackage redis).
//
// The store holds only control-plane state: node records that expire by the
// store's own clock, claims that say which server runs a unit (a player, a
// lobby code), handoffs written for one target server and taken once (a
// take holds a handoff until its taker confirms it, so that a take whose
// caller gave up loses nothing), atomic counters for fleet-wide tickets and
// rate limits, and durable records for registers such as the federation's.
// Game traffic never passes through it. Each of these is a role interface
// (Registry, Claims, Handoffs, Counters, RecordStore), and Backplane is
// their union; a consumer that needs one role may ask for it alone.
//
// Wrap decorates a backplane with hooks around every call (metrics and the
// test kit's fault injection are built on it), keeping the optional
// interfaces, such as RecordSwapper, of the backplane it wraps.
//
// A Backplane value is bound to one cluster: every key it writes is
// namespaced by the cluster name, so two clusters on one store never see
// each other. Implementations are safe for concurrent use, take a context on
// every call, and return errors (wrapped, never panics) when the store is
// unreachable; callers are expected to bound each call with a short deadline.
//
// The contract is checked by one conformance suite, package backplanetest,
// which every implementation runs.
package backplane
