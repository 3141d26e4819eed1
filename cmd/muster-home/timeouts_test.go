package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// TestServeTimeouts: home's keep-alive connection that goes quiet after a
// request, and a POST whose body never comes, are closed at home's idle and
// read timeouts; the second used to be held for ever.
func TestServeTimeouts(t *testing.T) {
	const closedWithin = 10 * time.Second // a failure deadline, never a measurement
	oldIdle, oldRead := idleTimeout, readTimeout
	idleTimeout, readTimeout = 200*time.Millisecond, 200*time.Millisecond
	t.Cleanup(func() { idleTimeout, readTimeout = oldIdle, oldRead })

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(testbin.FreePort(t, "127.0.0.1")))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "-addr", addr}, &bytes.Buffer{}, &bytes.Buffer{}) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d", code)
		}
	})
	if err := testbin.WaitDial(addr, closedWithin); err != nil {
		t.Fatal(err)
	}
	conn := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	waitClosed := func(what string, c net.Conn, r *bufio.Reader) {
		c.SetReadDeadline(time.Now().Add(closedWithin))
		if _, err := io.Copy(io.Discard, r); errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s still open after %v", what, closedWithin)
		}
	}

	idle, idleR := conn()
	if _, err := io.WriteString(idle, "GET "+federation.PathRegions+" HTTP/1.1\r\nHost: home\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(idleR, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("GET %s: %d, close %v; want 200 on a kept-alive connection", federation.PathRegions, resp.StatusCode, resp.Close)
	}
	slow, slowR := conn()
	if _, err := io.WriteString(slow, "POST "+federation.PathJoin+" HTTP/1.1\r\nHost: home\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"name\":"); err != nil {
		t.Fatal(err)
	}
	waitClosed("the idle keep-alive connection", idle, idleR)
	waitClosed("the connection whose body never came", slow, slowR)
}
