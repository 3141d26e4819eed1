package testbin

import (
	"net"
	"strconv"
	"testing"
)

// FreePort's ports lie below the kernel's ephemeral range, where no
// outgoing connection and no listener on port 0, of this test or of
// another package's running beside it, can take one before the program
// it is for binds it: a Redis Cluster node's bus port, taken from port 0,
// was found in use that way under CI.
func TestFreePortBelowEphemeralRange(t *testing.T) {
	lo := ephemeralLow()
	for range 50 {
		p := FreePort(t, "127.0.0.1")
		if p >= lo || p < 1024 {
			t.Fatalf("port %d, want one in [1024, %d)", p, lo)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		l.Close()
	}
}
