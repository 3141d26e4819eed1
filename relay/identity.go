package relay

import (
	"net/http"
)

type identityKey struct{}

// FromRelay reports whether r reached this server through another server's
// relay with a valid signature, so that r.RemoteAddr, r.Host and
// ClientScheme(r) describe the client as the relaying server saw it.
func FromRelay(r *http.Request) bool {
	_, ok := r.Context().Value(identityKey{}).(*identity)
	return ok
}

// ClientScheme returns "https" or "http": the scheme of the client's
// connection to the server it reached first. For a relayed request it is
// the signed scheme; otherwise it is "https" when r came over TLS. Behind a
// TLS-terminating proxy both servers see "http", as a direct connection
// would.
func ClientScheme(r *http.Request) string {
	if id, ok := r.Context().Value(identityKey{}).(*identity); ok {
		return id.scheme
	}
	if r.TLS != nil {
		return "https"
	}
	return "http"
}
