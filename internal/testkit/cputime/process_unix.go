//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Process returns the CPU time this process has used so far, in user
// space and in the kernel, over all its threads (getrusage); 0 if the
// system does not tell.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
