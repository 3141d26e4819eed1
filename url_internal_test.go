package muster

import (
	"net"
	"testing"
)

// TestLocalURL: the URL logged at start opens the server: a wildcard or
// the usual loopback address becomes localhost, and any other address,
// such as a second loopback address a fleet on one machine listens on,
// stays as it is.
func TestLocalURL(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"0.0.0.0:8080":   "http://localhost:8080/",
		"[::]:8080":      "http://localhost:8080/",
		"127.0.0.1:8080": "http://localhost:8080/",
		"[::1]:8080":     "http://localhost:8080/",
		"127.0.0.2:8080": "http://127.0.0.2:8080/",
		"10.1.2.3:80":    "http://10.1.2.3:80/",
	} {
		tcp, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := localURL(tcp); got != want {
			t.Errorf("localURL(%s) = %s, want %s", addr, got, want)
		}
	}
}
