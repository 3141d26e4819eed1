// Package rawhttp speaks HTTP/1.1 by hand over plain TCP connections, for
// tests of a server's timeouts: a keep-alive connection left quiet, a
// request whose body never comes, and a wait for the server to close
// either.
package rawhttp

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// ClosedWithin bounds WaitClosed: a failure deadline, never a measurement.
const ClosedWithin = 10 * time.Second

// Conn is a TCP connection to an HTTP server and a reader of what the
// server sends on it.
type Conn struct {
	net.Conn
	R *bufio.Reader
}

// Dial opens a TCP connection to addr, closed when the test ends.
func Dial(tb testing.TB, addr string) *Conn {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return &Conn{Conn: c, R: bufio.NewReader(c)}
}

// Send writes s as it is, failing the test on an error.
func (c *Conn) Send(tb testing.TB, s string) {
	tb.Helper()
	if _, err := io.WriteString(c.Conn, s); err != nil {
		tb.Fatal(err)
	}
}

// KeptAlive asks addr for path on a connection of its own, checks the 200
// that keeps it alive, and returns the connection, left quiet.
func KeptAlive(tb testing.TB, addr, path string) *Conn {
	tb.Helper()
	c := Dial(tb, addr)
	c.Send(tb, "GET "+path+" HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	resp, err := http.ReadResponse(c.R, nil)
	if err != nil {
		tb.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		tb.Fatalf("GET %s: %d, close %v; want 200 on a kept-alive connection", path, resp.StatusCode, resp.Close)
	}
	return c
}

// WaitClosed reads c until the server closes it, and fails the test if it
// is still open after ClosedWithin; what names the connection.
func (c *Conn) WaitClosed(tb testing.TB, what string) {
	tb.Helper()
	c.SetReadDeadline(time.Now().Add(ClosedWithin))
	_, err := io.Copy(io.Discard, c.R)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		tb.Errorf("%s still open after %v", what, ClosedWithin)
	}
	// nil (EOF) or a reset: closed by the server.
}
