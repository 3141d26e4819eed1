package relay

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestRealIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}
	cases := []struct {
		name, peer, realIP, xff, want string
	}{
		{"trusted peer, X-Real-IP", "127.0.0.1:5000", "203.0.113.7", "", "203.0.113.7:0"},
		{"trusted peer, X-Forwarded-For", "10.1.2.3:5000", "", "198.51.100.1, 203.0.113.7, 10.9.9.9", "203.0.113.7:0"},
		{"untrusted peer names another", "192.0.2.1:5000", "203.0.113.7", "203.0.113.8", "192.0.2.1:5000"},
		{"trusted peer, garbage", "127.0.0.1:5000", "not-an-ip", "also not", "127.0.0.1:5000"},
		{"trusted peer, nothing", "127.0.0.1:5000", "", "", "127.0.0.1:5000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			h := RealIP(trusted)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r.RemoteAddr }))
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
				t.Fatalf("RemoteAddr %q, want %q", got, tc.want)
			}
		})
	}
}
