package relay

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// RealIP returns a middleware for servers behind load balancers: a request
// whose TCP peer is one of trusted is taken to come from the right-most
// address of its X-Forwarded-For that is not itself trusted, and
// r.RemoteAddr is set to it. A request from any other peer is left alone,
// so a client cannot name itself; nor can it through a trusted proxy, which
// appends the address it saw to whatever the client sent. X-Real-IP is
// ignored: many load balancers pass a client's own X-Real-IP through (see
// RealIPHeader). Install it before Middleware, which then signs the
// client's address for the server it relays to. The peer stays available
// through PeerAddr. With no trusted prefixes it does nothing.
func RealIP(trusted []netip.Prefix) func(http.Handler) http.Handler {
	return RealIPHeader(trusted, "")
}

// RealIPHeader is RealIP for a load balancer that sets header (such as
// X-Real-IP) to the client's address, replacing any the client sent: a
// request from a trusted peer that carries one valid address in header is
// taken to come from it; otherwise X-Forwarded-For decides, as in RealIP.
// Use it only when every trusted proxy overwrites header, or a client
// could name any address, loopback included. An empty header is RealIP.
func RealIPHeader(trusted []netip.Prefix, header string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if len(trusted) == 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if ip, ok := clientBehind(r, trusted, header); ok {
				r = withPeer(r)
				r.RemoteAddr = net.JoinHostPort(ip.String(), "0")
			}
			next.ServeHTTP(w, r)
		})
	}
}

type peerKey struct{}

// PeerAddr returns the address of r's TCP peer: r.RemoteAddr as the
// http.Server set it, before RealIP, RealIPHeader or Middleware replaced
// it with the client's. Decide loopback-only and other rights of the
// connection on it, never on r.RemoteAddr, which a header may have named.
// A middleware of another package that rewrites r.RemoteAddr in front of
// these is not seen.
func PeerAddr(r *http.Request) string {
	if p, ok := r.Context().Value(peerKey{}).(string); ok {
		return p
	}
	return r.RemoteAddr
}

// Forwarded reports whether r's RemoteAddr is no longer its TCP peer's:
// RealIP, RealIPHeader or Middleware replaced it with an address that a
// proxy or another server named. A right kept for the machine itself
// (a loopback-only endpoint) is not for such a request, whatever its peer.
func Forwarded(r *http.Request) bool {
	_, ok := r.Context().Value(peerKey{}).(string)
	return ok
}

// withPeer returns a shallow copy of r, about to have its RemoteAddr
// replaced, that remembers the TCP peer for PeerAddr.
func withPeer(r *http.Request) *http.Request {
	if _, ok := r.Context().Value(peerKey{}).(string); ok {
		return r.WithContext(r.Context())
	}
	return r.WithContext(context.WithValue(r.Context(), peerKey{}, r.RemoteAddr))
}

// clientBehind returns the client a trusted peer of r names.
func clientBehind(r *http.Request, trusted []netip.Prefix, header string) (netip.Addr, bool) {
	peer, err := netip.ParseAddrPort(PeerAddr(r))
	if err != nil || !isTrusted(peer.Addr().Unmap(), trusted) {
		return netip.Addr{}, false
	}
	if header != "" {
		if vs := r.Header.Values(header); len(vs) == 1 {
			if ip, err := netip.ParseAddr(strings.TrimSpace(vs[0])); err == nil {
				return ip.Unmap(), true
			}
		}
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
