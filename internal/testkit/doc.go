// Package testkit is the home of the test kit: the packages below it are
// imported only by tests and by the programs that test or measure (bench/,
// e2e, soak), never by the library, and a layer test (layers_test.go at the
// module root) keeps it so.
//
//   - playtest: one WebSocket player that speaks the protocol.
//   - testrun: runs a test owns and stops (GoRun, Start), waits on
//     conditions (WaitFor), a manual clock and a test logger.
//   - hosttest: the one game tests play (Game) and servers that host it.
//   - fleettest: fleets of servers on one backplane, and a backplane that
//     fails on purpose (Faulty).
//   - fleetproc: fleets of real server processes behind real nginx.
//   - fedtest: a federation home and its nodes.
//   - testbin: the outside programs (redis-server, nginx, chromium,
//     coturn) started on free loopback ports, or skipped.
//   - benchgame: the game the benchmarks play.
//   - cputime: the process's own CPU time, for what a benchmark cost.
//   - rawhttp: HTTP/1.1 by hand over TCP, for tests of a server's
//     timeouts.
package testkit
