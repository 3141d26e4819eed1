package relay

import "net/http"

// OpenLimit caps the connections a client address holds open at once on
// this server. The room host implements it: a connection relayed through
// the server is held on it as one played there is, so both count against
// the one cap (muster.room.limits.open), and an address cannot multiply
// its cap by the number of servers it steers to.
type OpenLimit interface {
	// HoldOpen counts one more connection from the client at ip (an IP
	// address, without a port) as open, and reports whether it may be:
	// false, counting nothing, when the address holds its cap already.
	HoldOpen(ip string) bool
	// ReleaseOpen lets go of a connection HoldOpen counted.
	ReleaseOpen(ip string)
}

// LimitOpen makes the relay hold every connection it relays in lim, by
// the client's address, from before it dials the target node until the
// session has ended; a client over its cap is answered 429 before the
// upgrade, as the room host answers it, and nothing is dialled. A
// connection the relay does not relay (served here, or locally after a
// failed dial) is not held by the relay: the handler that serves it
// holds it. The node the connection is relayed to counts it too, by the
// client's signed address. Call LimitOpen before Middleware serves; with
// none, relayed connections count against no cap here.
func (rl *Relay) LimitOpen(lim OpenLimit) { rl.open = lim }

// holdOpen holds a connection from rt's client in the relay's OpenLimit,
// or answers 429 and reports false. A true answer is to be let go of with
// releaseOpen.
func (rl *Relay) holdOpen(w http.ResponseWriter, rt route) bool {
	if rl.open == nil || rl.open.HoldOpen(rt.client.Addr().String()) {
		return true
	}
	rl.overOpen.Add(1)
	http.Error(w, "too many connections", http.StatusTooManyRequests)
	return false
}

// releaseOpen lets go of what holdOpen held for rt's client.
func (rl *Relay) releaseOpen(rt route) {
	if rl.open != nil {
		rl.open.ReleaseOpen(rt.client.Addr().String())
	}
}
