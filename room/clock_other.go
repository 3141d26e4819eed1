//go:build !linux

package room

import "time"

// threadSleep is nil where the scheduler relies on timers alone.
var threadSleep func(time.Duration)

// fineTimer is not built where the scheduler relies on timers alone.
type fineTimer struct{}

func newFineTimer() *fineTimer              { return nil }
func (*fineTimer) sleep(time.Duration) bool { return false }
func (*fineTimer) close()                   {}
