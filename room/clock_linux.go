package room

import (
	"syscall"
	"time"
)

// threadSleep blocks the calling thread for d in nanosleep(2).
var threadSleep = func(d time.Duration) {
	ts := syscall.NsecToTimespec(d.Nanoseconds())
	_ = syscall.Nanosleep(&ts, nil) // EINTR: the caller checks the clock
}
