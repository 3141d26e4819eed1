package room

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// fineTimer sleeps on a timerfd in Go's poller: the kernel's
// high-resolution timer makes the descriptor readable on time, and the
// poller wakes the goroutine within tens of microseconds, while its thread
// and its P run other goroutines meanwhile. (A sleep in nanosleep(2) is as
// exact, but holds the P in the system call: with both timekeepers asleep
// there, no P was left to notice network input, and a server's players
// were answered up to 10 ms late.)
type fineTimer struct {
	f  *os.File
	rc syscall.RawConn
}

// clockMonotonic is CLOCK_MONOTONIC.
const clockMonotonic = 1

// newFineTimer returns a timer, or nil where the kernel refuses one.
func newFineTimer() *fineTimer {
	fd, _, errno := syscall.RawSyscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return nil
	}
	f := os.NewFile(fd, "room-clock") // non-blocking: on Go's poller
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil
	}
	return &fineTimer{f: f, rc: rc}
}

// sleep returns after d, and reports false, at once, if it cannot wait.
func (t *fineTimer) sleep(d time.Duration) bool {
	spec := [2]syscall.Timespec{ // interval (none), then the first expiry
		1: syscall.NsecToTimespec(max(d.Nanoseconds(), 1)), // zero would disarm it
	}
	var errno syscall.Errno
	if err := t.rc.Control(func(fd uintptr) {
		_, _, errno = syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	}); err != nil || errno != 0 {
		return false
	}
	err := t.rc.Read(func(fd uintptr) bool {
		var n [8]byte // expirations since the last read
		_, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&n[0])), uintptr(len(n)))
		return errno != syscall.EAGAIN
	})
	return err == nil
}

func (t *fineTimer) close() { _ = t.f.Close() }
