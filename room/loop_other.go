//go:build !linux

package room

import (
	"bufio"
	"net"

	"github.com/coder/websocket"
)

// sockets is the event loop, which only Linux has: elsewhere every
// connection stays on the portable path.
type sockets struct{}

func newSockets(Config) *sockets { return nil }

func (s *sockets) take(*Client, net.Conn, *bufio.Reader, func(*loopConn, *Client, []byte) bool) *loopConn {
	return nil
}

func (s *sockets) stop() {}

// loopConn is never made here.
type loopConn struct {
	limit bucket
	ended chan struct{}
}

func (lc *loopConn) write(byte, []byte)                 {}
func (lc *loopConn) close(websocket.StatusCode, string) {}
func (lc *loopConn) inline() bool                       { return false }
func (lc *loopConn) queue(string, []byte)               {}
func (lc *loopConn) work(func(string, []byte) bool)     {}
func (lc *loopConn) flushQueued()                       {}
