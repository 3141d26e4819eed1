package relay

import (
	"encoding/base64"
	"net/http"
	"strings"
)

// originForm reports whether r's request line names only a path and a
// query (RFC 9112 section 3.2.1), the one form the relay forwards.
func originForm(r *http.Request) bool {
	u := r.URL
	return strings.HasPrefix(r.RequestURI, "/") && u.Scheme == "" && u.Opaque == "" &&
		u.User == nil && u.Host == "" && strings.HasPrefix(u.Path, "/")
}

// isUpgrade reports whether r is a WebSocket upgrade request that Accept
// could take; a malformed one is left to the local handler to refuse.
func isUpgrade(r *http.Request) bool {
	if r.Method != http.MethodGet || r.ProtoMajor != 1 || r.ProtoMinor < 1 {
		return false
	}
	if !headerHasToken(r.Header, "Connection", "upgrade") || !headerHasToken(r.Header, "Upgrade", "websocket") {
		return false
	}
	if r.Header.Get("Sec-WebSocket-Version") != "13" {
		return false
	}
	keys := r.Header.Values("Sec-WebSocket-Key")
	if len(keys) != 1 {
		return false
	}
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(keys[0]))
	return err == nil && len(k) == 16
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

func subprotocols(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// hopHeaders are not forwarded in either direction: they describe one hop,
// or are set by the WebSocket library for its own handshake.
var hopHeaders = map[string]bool{
	"Connection":               true,
	"Keep-Alive":               true,
	"Proxy-Authenticate":       true,
	"Proxy-Authorization":      true,
	"Proxy-Connection":         true,
	"Te":                       true,
	"Trailer":                  true,
	"Transfer-Encoding":        true,
	"Upgrade":                  true,
	"Host":                     true,
	"Content-Length":           true,
	"Date":                     true,
	"Sec-Websocket-Key":        true,
	"Sec-Websocket-Version":    true,
	"Sec-Websocket-Accept":     true,
	"Sec-Websocket-Protocol":   true,
	"Sec-Websocket-Extensions": true,
}

// forwardHeaders returns the client's end-to-end request headers (cookies,
// origin, user agent, authorization and the like) for the upstream request.
func forwardHeaders(in http.Header) http.Header {
	out := make(http.Header, len(in))
	for k, v := range in {
		if hopHeaders[http.CanonicalHeaderKey(k)] || hasRelayPrefix(k) || isListedInConnection(in, k) {
			continue
		}
		out[k] = append([]string(nil), v...)
	}
	return out
}

func isListedInConnection(h http.Header, name string) bool {
	return headerHasToken(h, "Connection", name)
}

// copyResponseHeaders passes the node's handshake response headers (cookies,
// for example) on to the client.
func copyResponseHeaders(dst, src http.Header) {
	for k, v := range src {
		if hopHeaders[http.CanonicalHeaderKey(k)] || isListedInConnection(src, k) {
			continue
		}
		dst[k] = append([]string(nil), v...)
	}
}
