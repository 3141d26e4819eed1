//go:build !linux || !(amd64 || arm64)

package relay

// loops has no event loop here: every session is relayed by its pumps'
// goroutines.
type loops struct{}

// loop is never started here.
type loop struct{}

// relay returns at once.
func (*loops) relay(*session, *pump, *pump) {}

// wait returns at once.
func (*loops) wait() {}

// handBack is never called: no session is on a loop.
func (*loop) handBack(*session) {}

// writeOnLoop is never called: no side is on a loop.
func (*side) writeOnLoop([]byte) error { return nil }
