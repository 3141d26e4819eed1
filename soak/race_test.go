//go:build race

package soak

// defaultPlayers is -players' default under the race detector: the bots
// run in the test process, which the detector slows several times. A
// hundred of them took 1.2 cores of the 2 (34 s of CPU in a 28 s load
// scenario); beside a CPU hog the process fell behind the snapshots it
// received, a bot's pong waited behind seconds of unread frames, and the
// relay cut it (no answer to its ping within 15 s). 200 had starved the
// bots' own timeouts in .ci/run already.
const defaultPlayers = 50
