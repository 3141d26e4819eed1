package main

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/internal/testkit/rawhttp"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// TestServeTimeouts: home's keep-alive connection that goes quiet after a
// request, and a POST whose body never comes, are closed at home's idle and
// read timeouts; the second used to be held for ever.
func TestServeTimeouts(t *testing.T) {
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
	if err := testbin.WaitDial(addr, rawhttp.ClosedWithin); err != nil {
		t.Fatal(err)
	}
	idle := rawhttp.KeptAlive(t, addr, federation.PathRegions)
	slow := rawhttp.Dial(t, addr)
	slow.Send(t, "POST "+federation.PathJoin+" HTTP/1.1\r\nHost: home\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"name\":")
	idle.WaitClosed(t, "the idle keep-alive connection")
	slow.WaitClosed(t, "the connection whose body never came")
}
