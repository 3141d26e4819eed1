package muster_test

import (
	"context"
	"net"
	"testing"

	"github.com/muster-gg/muster"
)

// A drain that ends while a client is half-way through a request (its
// headers not all sent) ends Run without an error: the connection is cut
// at the shutdown bound, as documented. Before, Run returned "context
// deadline exceeded" and a server scaled down by docker compose with such
// a connection open (nginx keeps sending it requests until its resolver
// drops the address) exited 1 after a clean drain.
func TestDrainCutsOpenRequests(t *testing.T) {
	ts := startServer(t, muster.DefaultConfig())
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: muster\r\n")); err != nil {
		t.Fatal(err)
	}
	if err := ts.Fleet().Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := ts.run.wait(t, stopWithin); err != nil {
		t.Errorf("Run after a drain with a request open: %v, want nil (the connection cut)", err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the half-sent request's connection is still open after Run returned")
	}
}
