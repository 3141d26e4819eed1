// Package soak is the fault-injection and load suite of the duel example
// run as a real fleet: a redis-server, three game servers on 127.0.0.2-4
// with their own node ids, and nginx balancing round robin in front of
// them on 127.0.0.1. Bots (examples/duel/bot) play through nginx, each
// from its own loopback address (nginx binds its upstream connection to
// the client's address, so every server sees every player's own IP and
// per-IP rate limits apply per player, as they would on the Internet).
//
// One test, TestSoak, runs the scenarios in order against one fleet under
// load: load, nginx reload, Redis outage (restarted empty), SIGTERM of a
// server, SIGKILL of a server, and hostile input. After each it checks the
// invariants: no panic in any server's log; every bot seated, waiting or
// told why; no player seated twice; every claim in Redis on the node where
// its bot plays; no player lost where the specification says none is.
//
// The CI size runs by default (go test ./soak); the full size is
//
//	go test ./soak -run TestSoak -v -timeout 60m -players 10000
//
// It runs on Linux, and skips elsewhere: the servers listen on 127.0.0.2-4
// and the suite reads their memory and nginx's workers in /proc.
//
// See RELIABILITY.md at the module root for the figures. The package has
// no non-test code.
package soak
