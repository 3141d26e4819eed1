package relay

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// The headers a relaying server adds to the upgrade request it sends to the
// target node. Every header starting with headerPrefix is removed from every
// incoming request before anything else looks at it.
const (
	headerPrefix    = "Muster-Relay-"
	headerClient    = "Muster-Relay-Client"    // client address as ip:port
	headerScheme    = "Muster-Relay-Scheme"    // http or https
	headerHost      = "Muster-Relay-Host"      // Host the client asked for
	headerNode      = "Muster-Relay-Node"      // id of the target node
	headerTime      = "Muster-Relay-Time"      // unix seconds, decimal
	headerNonce     = "Muster-Relay-Nonce"     // 16 random bytes, base64url
	headerSignature = "Muster-Relay-Signature" // HMAC-SHA256, base64url
)

// keyLabel separates the signing key from any other use of the secret.
const keyLabel = "muster relay v1"

// maxField bounds every signed field, so a verifier never hashes more than a
// few kilobytes whatever a client sends.
const maxField = 1024

// deriveKey returns the HMAC key for relay signatures.
func deriveKey(secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(keyLabel))
	return m.Sum(nil)
}

// signed is the set of relay header values, signature included.
type signed struct {
	Client, Scheme, Host, Node, Time, Nonce, Signature string
}

// identity is what a valid signature vouches for.
type identity struct {
	client netip.AddrPort
	scheme string
	host   string
}

// mac computes the signature of s's fields and the request path. Each field
// is written with a length prefix, so no two different field lists hash the
// same input.
func mac(key []byte, s *signed, path string) []byte {
	m := hmac.New(sha256.New, key)
	for _, f := range [...]string{s.Client, s.Scheme, s.Host, s.Node, path, s.Time, s.Nonce} {
		writeField(m, f)
	}
	return m.Sum(nil)
}

func writeField(h hash.Hash, f string) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(f)))
	h.Write(n[:])
	h.Write([]byte(f))
}

// sign returns the header values that vouch for client, scheme and host on a
// request to node's path, made at now.
func sign(key []byte, client netip.AddrPort, scheme, host, node, path string, now time.Time) signed {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:]) // crypto/rand.Read never fails on supported platforms
	s := signed{
		Client: client.String(),
		Scheme: scheme,
		Host:   host,
		Node:   node,
		Time:   strconv.FormatInt(now.Unix(), 10),
		Nonce:  base64.RawURLEncoding.EncodeToString(nonce[:]),
	}
	s.Signature = base64.RawURLEncoding.EncodeToString(mac(key, &s, path))
	return s
}

// setHeaders writes s into h.
func (s *signed) setHeaders(h http.Header) {
	h.Set(headerClient, s.Client)
	h.Set(headerScheme, s.Scheme)
	h.Set(headerHost, s.Host)
	h.Set(headerNode, s.Node)
	h.Set(headerTime, s.Time)
	h.Set(headerNonce, s.Nonce)
	h.Set(headerSignature, s.Signature)
}

// takeHeaders removes every relay header from h and returns the values of
// the known ones. complete is false when one of them is missing or repeated.
func takeHeaders(h http.Header) (s signed, complete bool) {
	complete = true
	get := func(name string) string {
		v := h[name]
		if len(v) != 1 {
			complete = false
			return ""
		}
		return v[0]
	}
	s = signed{
		Client:    get(headerClient),
		Scheme:    get(headerScheme),
		Host:      get(headerHost),
		Node:      get(headerNode),
		Time:      get(headerTime),
		Nonce:     get(headerNonce),
		Signature: get(headerSignature),
	}
	for name := range h {
		if hasRelayPrefix(name) {
			// A name in another letter case is a second copy of a
			// known header, or an unknown one: either way not ours.
			if http.CanonicalHeaderKey(name) != name {
				complete = false
			}
			delete(h, name)
		}
	}
	return s, complete
}

// hasRelayPrefix reports whether a header name is a relay header, in any
// letter case (a header map built by hand need not be canonical).
func hasRelayPrefix(name string) bool {
	return len(name) >= len(headerPrefix) && strings.EqualFold(name[:len(headerPrefix)], headerPrefix)
}

// verify checks that s was signed with key for this node and path, at a
// time within maxSkew of now, and returns the identity it vouches for.
//
// authentic reports whether the signature itself is valid, that is, whether
// a server holding the key made these headers, even if for another node or
// too long ago; such a request has already been relayed once and must not
// be relayed again. Headers a client made up are not authentic.
func verify(key []byte, s *signed, node, path string, now time.Time, maxSkew time.Duration) (id identity, authentic bool, err error) {
	for _, f := range [...]string{s.Client, s.Scheme, s.Host, s.Node, s.Time, s.Nonce, s.Signature} {
		if len(f) > maxField {
			return identity{}, false, errMalformed
		}
	}
	got, err := base64.RawURLEncoding.DecodeString(s.Signature)
	if err != nil || len(got) != sha256.Size {
		return identity{}, false, errMalformed
	}
	if !hmac.Equal(got, mac(key, s, path)) {
		return identity{}, false, errBadSignature
	}
	if s.Node != node {
		return identity{}, true, errWrongTarget
	}
	sec, err := strconv.ParseInt(s.Time, 10, 64)
	if err != nil {
		return identity{}, true, errMalformed
	}
	if d := now.Sub(time.Unix(sec, 0)); d > maxSkew || d < -maxSkew {
		return identity{}, true, errStale
	}
	// The fields below were made by a server holding the key; they are
	// still checked, so a bug on the signing side cannot smuggle in an
	// address that does not parse.
	client, err := netip.ParseAddrPort(s.Client)
	if err != nil {
		return identity{}, true, errMalformed
	}
	if s.Scheme != "http" && s.Scheme != "https" {
		return identity{}, true, errMalformed
	}
	return identity{client: client, scheme: s.Scheme, host: s.Host}, true, nil
}

// clientAddr parses the address of the client as this server resolved it
// (r.RemoteAddr, possibly rewritten by a trusted proxy middleware in front
// of the relay). A bare IP gets port 0.
func clientAddr(remoteAddr string) (netip.AddrPort, bool) {
	if ap, err := netip.ParseAddrPort(remoteAddr); err == nil {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
	}
	if a, err := netip.ParseAddr(strings.Trim(remoteAddr, "[]")); err == nil {
		return netip.AddrPortFrom(a.Unmap(), 0), true
	}
	return netip.AddrPort{}, false
}
