package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/internal/testkit/testbin"
	"github.com/muster-gg/muster/internal/testkit/testrun"
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
	idle, idleR := testrun.KeptAlive(t, addr, "home", federation.PathRegions)
	slow, slowR := testrun.RawConn(t, addr)
	if _, err := io.WriteString(slow, "POST "+federation.PathJoin+" HTTP/1.1\r\nHost: home\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"name\":"); err != nil {
		t.Fatal(err)
	}
	testrun.WaitClosed(t, "the idle keep-alive connection", idle, idleR, closedWithin)
	testrun.WaitClosed(t, "the connection whose body never came", slow, slowR, closedWithin)
}
