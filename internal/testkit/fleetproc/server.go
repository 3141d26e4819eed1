package fleetproc

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// Server is one duel process of a Fleet. Its methods are safe for
// concurrent use.
type Server struct {
	// ID is the server's node id, duel-1, duel-2, … in start order.
	ID string
	// Host is the loopback address of the server's slot.
	Host string
	// Addr is the address the server listens on, Host:port.
	Addr string

	cmd    *exec.Cmd
	out    testbin.Buffer
	exited chan struct{}
	err    error // cmd.Wait's, valid once exited is closed
	exitAt time.Time
}

// start starts the process and a goroutine that waits for it; the
// goroutine ends when the process does.
func (s *Server) start() error {
	// Own process group, so that Kill reaches everything; killed by the
	// kernel if the test process dies (on Linux: testbin.ChildAttr).
	s.cmd.SysProcAttr = testbin.ChildAttr(true)
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that started the child exits:
		// keep this goroutine on its thread until the child is gone.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		s.err = s.cmd.Wait()
		s.exitAt = time.Now()
		close(s.exited)
	}()
	return <-started
}

// Running reports whether the process has not exited yet.
func (s *Server) Running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Exited is closed when the process has exited.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Err returns the process's exit error (nil for status 0). It is valid
// once Exited is closed.
func (s *Server) Err() error {
	<-s.exited
	return s.err
}

// ExitAt returns when the process was seen to exit. It waits for Exited.
func (s *Server) ExitAt() time.Time {
	<-s.exited
	return s.exitAt
}

// ExitCode returns the process's exit status, -1 when a signal ended it.
// It waits for Exited.
func (s *Server) ExitCode() int {
	<-s.exited
	return s.cmd.ProcessState.ExitCode()
}

// PID returns the process id of the server.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Signal sends sig to the server process alone.
func (s *Server) Signal(sig syscall.Signal) error { return s.cmd.Process.Signal(sig) }

// Kill sends sig to the server's process group (to the server alone
// where there are none: testbin.SignalGroup).
func (s *Server) Kill(sig syscall.Signal) { _ = testbin.SignalGroup(s.cmd.Process, sig) }

// Log returns what the server printed so far, stdout and stderr.
func (s *Server) Log() string { return s.out.String() }

// Tail returns the last lines of s, after a line that counts the lines
// left out; s itself when lines is 0.
func Tail(s string, lines int) string {
	if lines <= 0 {
		return s
	}
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > lines {
		ls = append([]string{fmt.Sprintf("… %d lines", len(ls)-lines)}, ls[len(ls)-lines:]...)
	}
	return strings.Join(ls, "\n")
}

// Forbidden returns the first of forbidden that log contains, or "".
func Forbidden(log string, forbidden []string) string {
	for _, f := range forbidden {
		if strings.Contains(log, f) {
			return f
		}
	}
	return ""
}
