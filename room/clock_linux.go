package room

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// threadSleep blocks the calling thread, and its P, for d in nanosleep(2).
var threadSleep = func(d time.Duration) {
	ts := syscall.NsecToTimespec(d.Nanoseconds())
	_ = syscall.Nanosleep(&ts, nil) // EINTR: the caller checks the clock
}

// fineTimer sleeps on a timerfd in Go's poller: the kernel's
// high-resolution timer makes the descriptor readable on time, and the
// poller wakes the goroutine, while its thread and its P run other
// goroutines meanwhile.
type fineTimer struct {
	f  *os.File
	rc syscall.RawConn
	// What sleep passes to rc, made once: a sleep allocates nothing.
	spec        [2]syscall.Timespec // interval (none), then the first expiry
	errno       syscall.Errno
	set         func(fd uintptr)
	readExpired func(fd uintptr) bool
	expirations [8]byte
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
	t := &fineTimer{f: f, rc: rc}
	t.set = func(fd uintptr) {
		_, _, t.errno = syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&t.spec)), 0, 0, 0)
	}
	t.readExpired = func(fd uintptr) bool {
		_, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&t.expirations[0])), uintptr(len(t.expirations)))
		return errno != syscall.EAGAIN
	}
	return t
}

// sleep returns after d, and reports false, at once, if it cannot wait.
func (t *fineTimer) sleep(d time.Duration) bool {
	t.spec[1] = syscall.NsecToTimespec(max(d.Nanoseconds(), 1)) // zero would disarm it
	if err := t.rc.Control(t.set); err != nil || t.errno != 0 {
		return false
	}
	return t.rc.Read(t.readExpired) == nil
}

func (t *fineTimer) close() { _ = t.f.Close() }
