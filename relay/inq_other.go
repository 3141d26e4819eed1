//go:build !linux || !(amd64 || arm64)

package relay

import (
	"net"
	"syscall"
)

// inqConn returns nil: the pump uses the connection's own Read.
func inqConn(net.Conn) syscall.RawConn { return nil }

// copyInq is not used where inqConn returns nil.
func (p *pump) copyInq(syscall.RawConn) error { return p.copyReads() }

// rawWriter is not used where newRawWriter returns nil.
type rawWriter struct{}

// newRawWriter returns nil: sides write with the connection's own Write.
func newRawWriter(net.Conn, *side) *rawWriter { return nil }

// Write is never called.
func (*rawWriter) Write([]byte) error { return nil }
