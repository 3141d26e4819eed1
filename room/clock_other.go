//go:build !linux

package room

import "time"

// threadSleep is nil where the scheduler relies on timers alone.
var threadSleep func(time.Duration)
