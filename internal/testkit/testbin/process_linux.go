//go:build linux

package testbin

import (
	"os"
	"syscall"
)

// ChildAttr returns the attributes of a child process: killed by the
// kernel if the thread that started it exits first (Pdeathsig: the test
// process dying leaves no server behind), and, when group is true, in a
// process group of its own (SignalGroup).
func ChildAttr(group bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: group, Pdeathsig: syscall.SIGKILL}
}

// SignalGroup sends sig to the process group p leads (ChildAttr with
// group), which reaches the children it started too.
func SignalGroup(p *os.Process, sig syscall.Signal) error {
	return syscall.Kill(-p.Pid, sig)
}
