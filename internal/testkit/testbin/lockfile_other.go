//go:build !unix

package testbin

import (
	"errors"
	"fmt"
)

// errNoFileLock is LockFile's error where the system has no flock.
var errNoFileLock = errors.New("testbin: no file lock (flock) on this system")

// LockFile is the kernel's file lock on Unix systems; here there is none
// (the standard library has no portable one): it returns an error, and a
// suite that needs to take turns fails rather than run beside another.
func LockFile(path string) (unlock func(), err error) {
	return nil, fmt.Errorf("lock %s: %w", path, errNoFileLock)
}
