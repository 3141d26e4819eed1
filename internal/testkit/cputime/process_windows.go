package cputime

import (
	"syscall"
	"time"
)

// Process returns the CPU time this process has used so far, in user
// space and in the kernel, over all its threads (GetProcessTimes); 0 if
// the system does not tell.
func Process() time.Duration {
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0
	}
	var created, exited, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return 0
	}
	return span(kernel) + span(user)
}

// span is a FILETIME that holds a length of time (in 100 ns units), not
// a date: Filetime.Nanoseconds would count it from 1601.
func span(f syscall.Filetime) time.Duration {
	return time.Duration(int64(f.HighDateTime)<<32|int64(f.LowDateTime)) * 100
}
