// Package fleetproc runs the duel example (examples/duel) as a fleet of
// real processes, for the end-to-end tests (e2e) and the soak suite (soak):
// a redis-server, one game server per loopback host with its own node id,
// and nginx balancing round robin in front of them with
// deploy/nginx-local.conf, the README's configuration.
//
// Build compiles the server once per test process (Main gives it a
// temporary directory and checks for leaked goroutines). Start starts the
// fleet for a test and stops everything it started when the test ends:
// every server gets SIGTERM and a grace period, then SIGKILL to its process
// group, and its log is checked for what it must never print. A test may
// stop, kill and restart servers in between; Ensure refills the empty
// slots.
//
// What differs between the suites (timeouts, which node states count as
// live, extra server settings, nginx edits, how much of a log to show) is
// in Config; each suite keeps its own scenarios and checks.
//
// A Fleet's methods are safe for concurrent use, except Start and the
// Cleanup it registers. The programs come from PATH through testbin: a
// missing one skips the test, or fails it under CI.
package fleetproc
