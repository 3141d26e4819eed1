package testrun

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

// RawConn opens a TCP connection to addr, closed when the test ends: for
// tests of a server's timeouts, which need the connection itself.
func RawConn(tb testing.TB, addr string) (net.Conn, *bufio.Reader) {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// KeptAlive asks addr for path (GET, Host host) on a connection of its own,
// checks the 200 that keeps it alive, and returns the connection, left
// quiet.
func KeptAlive(tb testing.TB, addr, host, path string) (net.Conn, *bufio.Reader) {
	tb.Helper()
	c, r := RawConn(tb, addr)
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: "+host+"\r\n\r\n"); err != nil {
		tb.Fatal(err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		tb.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		tb.Fatalf("GET %s: %d, close %v; want 200 on a kept-alive connection", path, resp.StatusCode, resp.Close)
	}
	return c, r
}

// WaitClosed reads c until the server closes it, and fails the test if it
// is still open after within (a failure deadline, never a measurement).
func WaitClosed(tb testing.TB, what string, c net.Conn, r *bufio.Reader, within time.Duration) {
	tb.Helper()
	c.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, r)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		tb.Errorf("%s still open after %v", what, within)
	}
	// nil (EOF) or a reset: closed by the server.
}
