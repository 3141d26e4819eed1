//go:build race

package soak

// defaultPlayers is -players' default under the race detector: the bots
// run in the test process, which the detector slows several times, and
// 200 of them starved their own timeouts on a 2-core machine.
const defaultPlayers = 100
