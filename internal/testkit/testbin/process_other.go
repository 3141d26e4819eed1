//go:build !linux

package testbin

import (
	"os"
	"syscall"
)

// ChildAttr returns the attributes of a child process. Elsewhere than on
// Linux there are none: a child outlives a test process that dies before
// it (no Pdeathsig), and is in its parent's process group.
func ChildAttr(group bool) *syscall.SysProcAttr { return nil }

// SignalGroup sends sig to p alone, without a process group here: the
// children it started are not reached. SIGKILL kills it on every system;
// another signal may not be supported (Windows).
func SignalGroup(p *os.Process, sig syscall.Signal) error {
	if sig == syscall.SIGKILL {
		return p.Kill()
	}
	return p.Signal(sig)
}
