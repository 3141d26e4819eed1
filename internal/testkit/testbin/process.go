package testbin

import (
	"fmt"
	"io"
	"net"
	"os/exec"
	"syscall"
	"time"
)

// StartChild starts cmd with its standard output and error written to out,
// with ChildAttr(group): on Linux, killed by the kernel if this process
// dies first, and, when group is true, in a process group of its own, so
// that stopping the group reaches the children it starts too.
func StartChild(cmd *exec.Cmd, out io.Writer, group bool) error {
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = ChildAttr(group)
	return cmd.Start()
}

// kill kills the process *cmd runs, if any, waits for it to exit and
// forgets it.
func kill(cmd **exec.Cmd) {
	if *cmd == nil {
		return
	}
	_ = (*cmd).Process.Kill()
	_ = (*cmd).Wait()
	*cmd = nil
}

// stopGroup ends the process group cmd leads (StartChild with group):
// SIGTERM, up to 5 s to exit, then SIGKILL for whatever is left (children
// that outlived the leader).
func stopGroup(cmd *exec.Cmd) {
	_ = SignalGroup(cmd.Process, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = SignalGroup(cmd.Process, syscall.SIGKILL)
		<-done
	}
	_ = SignalGroup(cmd.Process, syscall.SIGKILL)
}

// WaitDial polls addr until it accepts a TCP connection or timeout passes.
func WaitDial(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not accepting connections after %v: %w", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
