//go:build unix

package testbin

import (
	"fmt"
	"os"
	"syscall"
)

// LockFile waits for the kernel's lock (flock) on the file at path,
// made if need be, and returns its release: a process that dies releases
// it. Test suites in separate processes take turns with it.
func LockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
