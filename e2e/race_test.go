//go:build race

package e2e

// raceEnabled builds the servers with the race detector too.
const raceEnabled = true
