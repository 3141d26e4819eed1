package relay

import (
	"context"
	"net/http"
	"strings"
)

// admit strips relay headers from r and, when they carry a valid signature
// not used before, returns a copy of r describing the client. marked reports whether the
// headers were made by a server of the fleet, valid for this request or
// not: such a request has been relayed once already and is never relayed
// again, so servers with different or stale views (an address that now
// belongs to another server) cannot bounce a connection between them.
// Headers a client made up are stripped and have no other effect.
func (rl *Relay) admit(r *http.Request) (_ *http.Request, marked bool) {
	if !hasRelayHeader(r.Header) {
		return r, false
	}
	r2 := withPeer(r)
	r2.Header = r.Header.Clone()
	signed := hasSignatureHeader(r2.Header)
	s, complete := takeHeaders(r2.Header)
	if rl.key == nil {
		return r2, false
	}
	var (
		id        identity
		authentic bool
		err       = errMalformed
	)
	if complete {
		now := rl.now()
		id, authentic, err = verify(rl.key, &s, rl.cfg.NodeID, r.URL.Path, now, rl.cfg.MaxSkew)
		if err == nil {
			// Valid once: a signature is fresh for up to twice the
			// window, from maxSkew early to maxSkew late.
			err = rl.nonces.use(s.Nonce, now, 2*rl.cfg.MaxSkew)
		}
	}
	if err != nil {
		// Only a signature that does not verify is a rejected one: other
		// relay headers without one (Muster-Relay-Foo) are a client's or a
		// proxy's, stripped like the rest, and no sign of a forgery.
		if signed {
			rl.rejected.Add(1)
		}
		rl.log.Debug("relay headers ignored", "remote_addr", r.RemoteAddr, "signed", signed, "err", err)
		return r2, authentic
	}
	rl.verified.Add(1)
	r2 = r2.WithContext(context.WithValue(r2.Context(), identityKey{}, &id))
	r2.RemoteAddr = id.client.String()
	r2.Host = id.host
	return r2, true
}

// hasSignatureHeader reports whether h has a relay signature header, in
// any letter case: what a server of the fleet, or someone forging one,
// sends.
func hasSignatureHeader(h http.Header) bool {
	for name := range h {
		if strings.EqualFold(name, headerSignature) {
			return true
		}
	}
	return false
}

func hasRelayHeader(h http.Header) bool {
	for name := range h {
		if hasRelayPrefix(name) {
			return true
		}
	}
	return false
}
