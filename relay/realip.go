package relay

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// RealIP returns a middleware for servers behind load balancers: a request
// whose peer is one of trusted is taken to come from the client that the
// peer names, in X-Real-IP or else the right-most untrusted address of
// X-Forwarded-For, and r.RemoteAddr is set to it. A request from any
// other peer is left alone, so a client cannot name itself. Install it
// before Middleware, which then signs the client's address for the server
// it relays to. With no trusted prefixes it does nothing.
func RealIP(trusted []netip.Prefix) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if len(trusted) == 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if ip, ok := clientBehind(r, trusted); ok {
				r2 := new(http.Request)
				*r2 = *r
				r2.RemoteAddr = net.JoinHostPort(ip.String(), "0")
				r = r2
			}
			next.ServeHTTP(w, r)
		})
	}
}

// clientBehind returns the client a trusted peer of r names.
func clientBehind(r *http.Request, trusted []netip.Prefix) (netip.Addr, bool) {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !isTrusted(peer.Addr().Unmap(), trusted) {
		return netip.Addr{}, false
	}
	if ip, err := netip.ParseAddr(strings.TrimSpace(r.Header.Get("X-Real-IP"))); err == nil {
		return ip.Unmap(), true
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		ip, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return netip.Addr{}, false
		}
		if ip = ip.Unmap(); !isTrusted(ip, trusted) {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

func isTrusted(ip netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
