package epoll

import (
	"net"
	"os"
	"syscall"
	"unsafe"
)

// ET is EPOLLET as the uint32 that syscall.EpollEvent.Events holds.
const ET = 1 << 31

// New returns a new epoll instance, non-blocking (as its duplicates are):
// Go's poller can wait for it.
func New() (int, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return -1, err
	}
	if err := syscall.SetNonblock(epfd, true); err != nil {
		_ = syscall.Close(epfd)
		return -1, err
	}
	return epfd, nil
}

// DupConn returns a duplicate of c's descriptor if c is a TCP connection:
// closing c then takes the socket off Go's poller and leaves it open.
func DupConn(c net.Conn) (int, bool) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return 0, false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return 0, false
	}
	fd, errno := -1, syscall.Errno(0)
	if err := rc.Control(func(s uintptr) {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, s, syscall.F_DUPFD_CLOEXEC, 0)
		fd, errno = int(r), e
	}); err != nil || errno != 0 {
		return 0, false
	}
	return fd, true
}

// DupFile returns an *os.File, on Go's poller, for a duplicate of fd.
func DupFile(fd int, name string) (*os.File, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD_CLOEXEC, 0)
	if errno != 0 {
		return nil, errno
	}
	return os.NewFile(r, name), nil
}

// Wait fills events with the events epfd has ready and returns how many,
// or -1 if the call failed: at once, or, with block, once it has one.
// Only a wait that can block needs the scheduler's system call state.
func Wait(epfd int, events []syscall.EpollEvent, block bool) int {
	for {
		var (
			n     uintptr
			errno syscall.Errno
		)
		if block {
			n, _, errno = syscall.Syscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd),
				uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), ^uintptr(0), 0, 0)
		} else {
			n, _, errno = syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd),
				uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
		}
		switch errno {
		case 0:
			return int(n)
		case syscall.EINTR:
		default:
			return -1
		}
	}
}
