package relay_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"testing/synctest"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
	"github.com/muster-gg/muster/relay"
)

// TestDrainNotOnForwardedLoopback puts the fleet's drain endpoint behind
// RealIP, as a server behind a load balancer has it, and checks that no
// header makes a request from afar count as local: the loopback check is
// made on the TCP peer, and a request a proxy forwarded is never local.
func TestDrainNotOnForwardedLoopback(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}
	cases := []struct {
		name, peer string
		header     http.Header
		realIP     string // RealIPHeader's header; "" for RealIP
	}{
		{"trusted proxy passes the client's X-Real-IP through", "10.0.0.5:4000",
			http.Header{"X-Real-Ip": {"127.0.0.1"}, "X-Forwarded-For": {"203.0.113.9"}}, ""},
		{"local proxy passes the client's X-Real-IP through", "127.0.0.1:4000",
			http.Header{"X-Real-Ip": {"127.0.0.1"}, "X-Forwarded-For": {"203.0.113.9"}}, ""},
		{"client sends X-Forwarded-For: 127.0.0.1", "10.0.0.5:4000",
			http.Header{"X-Forwarded-For": {"127.0.0.1, 203.0.113.9"}}, ""},
		{"X-Real-IP trusted by configuration", "10.0.0.5:4000",
			http.Header{"X-Real-Ip": {"127.0.0.1"}}, "X-Real-IP"},
		{"client behind a local proxy", "127.0.0.1:4000",
			http.Header{"X-Forwarded-For": {"127.0.0.1"}}, ""},
		{"client names loopback without a proxy", "203.0.113.9:4000",
			http.Header{"X-Real-Ip": {"127.0.0.1"}, "X-Forwarded-For": {"127.0.0.1"}}, ""},
		{"local proxy names the client in the configured header only", "127.0.0.1:4000",
			http.Header{"True-Client-Ip": {"203.0.113.9"}}, "True-Client-IP"},
	}
	synctest.Test(t, func(t *testing.T) {
		c := fleettest.Start(t, 0, nil)
		s := c.Add(fleet.Config{NodeID: "a"})
		drain := func(peer string, header http.Header, realIP string) int {
			h := relay.RealIPHeader(trusted, realIP)(s.Handler())
			r := httptest.NewRequest("POST", fleet.PathDrain, nil)
			r.RemoteAddr = peer
			for k, v := range header {
				r.Header[k] = v
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			return w.Code
		}
		for _, tc := range cases {
			if got := drain(tc.peer, tc.header, tc.realIP); got != http.StatusForbidden {
				t.Errorf("%s: drain = %d, want 403", tc.name, got)
			}
		}
		synctest.Wait()
		if s.Draining() {
			t.Fatal("a request from afar started a drain")
		}
		// The operator on the machine itself still can.
		if got := drain("127.0.0.1:4000", nil, ""); got != http.StatusAccepted {
			t.Fatalf("drain from loopback = %d, want 202", got)
		}
		<-s.Done()
	})
}
