package fleet

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"testing"

	"github.com/muster-gg/muster/relay"
)

// FuzzDrainAllowed sends drains with a made-up peer, header and
// Authorization, straight and through RealIPHeader trusting loopback
// with the header as its real-IP header: without the token, only a
// loopback peer that no proxy forwarded for anyone may drain, and an
// empty token never opens the door.
func FuzzDrainAllowed(f *testing.F) {
	f.Add("127.0.0.1:4000", "True-Client-IP", "203.0.113.9", "", "")
	f.Add("127.0.0.1:4000", "X-Forwarded-For", "127.0.0.1", "Bearer s3cret", "s3cret")
	f.Add("[::1]:4000", "Forwarded", "for=127.0.0.1", "Bearer ", "")
	f.Add("203.0.113.9:4000", "X-Real-IP", "127.0.0.1", "Bearer x", "s3cret")
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	f.Fuzz(func(t *testing.T, peer, name, value, auth, token string) {
		fl := &Fleet{cfg: Config{DrainToken: token}}
		withToken := token != "" && auth == "Bearer "+token
		for _, via := range []bool{false, true} {
			r := httptest.NewRequest("POST", PathDrain, nil)
			r.RemoteAddr = peer
			if name != "" && !(name == "Authorization" && auth != "") {
				r.Header.Add(name, value)
			}
			if auth != "" {
				r.Header.Set("Authorization", auth)
			}
			var allowed, forwarded bool
			h := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				allowed, forwarded = fl.drainAllowed(r), relay.Forwarded(r)
			})
			if via {
				relay.RealIPHeader(trusted, name)(h).ServeHTTP(httptest.NewRecorder(), r)
			} else {
				h.ServeHTTP(httptest.NewRecorder(), r)
			}
			if !allowed || withToken {
				continue
			}
			host, _, err := net.SplitHostPort(peer)
			switch key := http.CanonicalHeaderKey(name); {
			case err != nil || !net.ParseIP(host).IsLoopback():
				t.Fatalf("drain allowed from peer %q without the token", peer)
			case forwarded:
				t.Fatalf("drain allowed for a request a proxy forwarded (%s: %q)", name, value)
			case r.Header[key] != nil && slices.Contains([]string{"X-Forwarded-For", "X-Real-Ip", "Forwarded"}, key):
				t.Fatalf("drain allowed with %s: %q", name, value)
			}
		}
	})
}
