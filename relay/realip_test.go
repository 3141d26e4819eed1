package relay

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

var testProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}

func TestRealIP(t *testing.T) {
	cases := []struct {
		name, header, peer, realIP, xff, want string
	}{
		{"trusted peer, X-Real-IP not configured", "", "127.0.0.1:5000", "203.0.113.7", "", "127.0.0.1:5000"},
		{"trusted peer, X-Real-IP ignored for X-Forwarded-For", "", "127.0.0.1:5000", "127.0.0.1", "203.0.113.8", "203.0.113.8:0"},
		{"trusted peer, X-Real-IP configured", "X-Real-IP", "127.0.0.1:5000", "203.0.113.7", "203.0.113.8", "203.0.113.7:0"},
		{"trusted peer, configured header garbage", "X-Real-IP", "127.0.0.1:5000", "nope", "203.0.113.8", "203.0.113.8:0"},
		{"trusted peer, X-Forwarded-For", "", "10.1.2.3:5000", "", "198.51.100.1, 203.0.113.7, 10.9.9.9", "203.0.113.7:0"},
		{"untrusted peer names another", "", "192.0.2.1:5000", "203.0.113.7", "203.0.113.8", "192.0.2.1:5000"},
		{"untrusted peer, X-Real-IP configured", "X-Real-IP", "192.0.2.1:5000", "127.0.0.1", "", "192.0.2.1:5000"},
		{"trusted peer, garbage", "", "127.0.0.1:5000", "not-an-ip", "also not", "127.0.0.1:5000"},
		{"trusted peer, nothing", "", "127.0.0.1:5000", "", "", "127.0.0.1:5000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got, peer string
			h := RealIPHeader(testProxies, tc.header)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				got, peer = r.RemoteAddr, PeerAddr(r)
			}))
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.peer
			if tc.realIP != "" {
				r.Header.Set("X-Real-IP", tc.realIP)
			}
			if tc.xff != "" {
				r.Header.Set("X-Forwarded-For", tc.xff)
			}
			h.ServeHTTP(httptest.NewRecorder(), r)
			if got != tc.want {
				t.Errorf("RemoteAddr %q, want %q", got, tc.want)
			}
			if peer != tc.peer {
				t.Errorf("PeerAddr %q, want the TCP peer %q", peer, tc.peer)
			}
		})
	}
}

// TestRealIPClientCannotRotateIdentity sends requests through a trusted
// proxy that appends the client's address to X-Forwarded-For and passes
// the client's own X-Real-IP through, as many load balancers do: whatever
// X-Real-IP the client sends, it is the same client.
func TestRealIPClientCannotRotateIdentity(t *testing.T) {
	var got []string
	h := RealIP(testProxies)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got = append(got, r.RemoteAddr)
	}))
	for _, claimed := range []string{"198.51.100.1", "198.51.100.2", "127.0.0.1", "::1", "10.0.0.9"} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.0.0.5:4000"
		r.Header.Set("X-Real-IP", claimed)
		r.Header.Set("X-Forwarded-For", claimed+", 203.0.113.9") // the client's, then the proxy's
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	for i, a := range got {
		if a != "203.0.113.9:0" {
			t.Errorf("request %d came from %q, want the client 203.0.113.9:0", i, a)
		}
	}
}

// FuzzRealIP checks that a request from an untrusted peer is never given
// another address, and that the peer is always kept for PeerAddr.
func FuzzRealIP(f *testing.F) {
	f.Add("10.0.0.5:4000", "127.0.0.1", "127.0.0.1, 203.0.113.9", true)
	f.Add("192.0.2.1:4000", "127.0.0.1", "127.0.0.1", false)
	f.Add("127.0.0.1:1", "::ffff:127.0.0.1", ",,", true)
	f.Fuzz(func(t *testing.T, peer, realIP, xff string, useHeader bool) {
		header := ""
		if useHeader {
			header = "X-Real-IP"
		}
		var got, gotPeer string
		h := RealIPHeader(testProxies, header)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			got, gotPeer = r.RemoteAddr, PeerAddr(r)
		}))
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = peer
		r.Header["X-Real-Ip"] = []string{realIP}
		r.Header["X-Forwarded-For"] = []string{xff}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if gotPeer != peer {
			t.Fatalf("PeerAddr %q, want %q", gotPeer, peer)
		}
		p, err := netip.ParseAddrPort(peer)
		if (err != nil || !isTrusted(p.Addr().Unmap(), testProxies)) && got != peer {
			t.Fatalf("untrusted peer %q became %q", peer, got)
		}
		if got != peer {
			a, err := netip.ParseAddrPort(got)
			if err != nil {
				t.Fatalf("RemoteAddr %q does not parse: %v", got, err)
			}
			if !useHeader && isTrusted(a.Addr(), testProxies) {
				t.Fatalf("client %q is a trusted proxy", got)
			}
		}
	})
}
