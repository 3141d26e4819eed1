//go:build unix

package soak

import "syscall"

// setRcvbuf sets socket fd's receive buffer (SO_RCVBUF) to n bytes.
func setRcvbuf(fd uintptr, n int) error {
	return syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
}
