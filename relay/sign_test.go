package relay

import (
	"crypto/hmac"
	"encoding/base64"
	"net/netip"
	"strconv"
	"testing"
	"time"
)

// FuzzVerify drives the signature check with arbitrary header values. A
// signature of "sign" is replaced by the correct one for the other values,
// so the fuzzer also explores the checks behind a valid MAC.
//
// Properties: verify never panics; it accepts only header sets whose MAC is
// right, whose node is the receiver, whose time is within the window and
// whose fields parse; authentic is true exactly when the MAC is right.
func FuzzVerify(f *testing.F) {
	key := deriveKey(testSecret)
	const node = "b"
	f.Fuzz(func(t *testing.T, client, scheme, host, target, ts, nonce, sig, path string, now int64) {
		s := signed{Client: client, Scheme: scheme, Host: host, Node: target, Time: ts, Nonce: nonce, Signature: sig}
		if sig == "sign" {
			s.Signature = base64.RawURLEncoding.EncodeToString(mac(key, &s, path))
		}
		id, authentic, err := verify(key, &s, node, path, time.Unix(now, 0), DefaultMaxSkew)

		raw, decErr := base64.RawURLEncoding.DecodeString(s.Signature)
		macOK := decErr == nil && hmac.Equal(raw, mac(key, &s, path))
		tooLong := false
		for _, f := range []string{s.Client, s.Scheme, s.Host, s.Node, s.Time, s.Nonce, s.Signature} {
			tooLong = tooLong || len(f) > maxField
		}
		if authentic != (macOK && !tooLong) {
			t.Fatalf("authentic = %v, but MAC valid = %v (oversized field %v)", authentic, macOK, tooLong)
		}
		if err != nil {
			if id != (identity{}) {
				t.Fatalf("rejected (%v) but returned identity %+v", err, id)
			}
			return
		}
		if !authentic || target != node {
			t.Fatalf("accepted a header set with authentic=%v, target %q", authentic, target)
		}
		sec, perr := strconv.ParseInt(ts, 10, 64)
		if perr != nil {
			t.Fatalf("accepted time %q: %v", ts, perr)
		}
		if d := time.Unix(now, 0).Sub(time.Unix(sec, 0)); d > DefaultMaxSkew || d < -DefaultMaxSkew {
			t.Fatalf("accepted time %d at %d, outside the window", sec, now)
		}
		ap, perr := netip.ParseAddrPort(client)
		if perr != nil || id.client != ap || id.scheme != scheme || id.host != host {
			t.Fatalf("identity %+v does not match the signed fields %q %q %q", id, client, scheme, host)
		}
		if scheme != "http" && scheme != "https" {
			t.Fatalf("accepted scheme %q", scheme)
		}
	})
}

func TestSignVerifyRoundTrip(t *testing.T) {
	t.Parallel()
	key := deriveKey(testSecret)
	now := time.Unix(1_800_000_000, 0)
	client := netip.MustParseAddrPort("[2001:db8::1]:40000")
	s := sign(key, client, "https", "play.example.com:443", "node-7", "/play/ws", now)
	id, authentic, err := verify(key, &s, "node-7", "/play/ws", now, time.Second)
	if err != nil || !authentic {
		t.Fatalf("verify(sign(...)) = %v, %v", authentic, err)
	}
	if id.client != client || id.scheme != "https" || id.host != "play.example.com:443" {
		t.Errorf("identity = %+v", id)
	}
	s2 := sign(key, client, "https", "play.example.com:443", "node-7", "/play/ws", now)
	if s2.Nonce == s.Nonce || s2.Signature == s.Signature {
		t.Error("two signatures share a nonce")
	}
}

// TestFieldsAreUnambiguous: moving bytes from one field to the next must
// change the signature.
func TestFieldsAreUnambiguous(t *testing.T) {
	t.Parallel()
	key := deriveKey(testSecret)
	a := signed{Client: "1.2.3.4:5", Scheme: "http", Host: "ab", Node: "c", Time: "1", Nonce: "n"}
	b := a
	b.Host, b.Node = "a", "bc"
	if hmac.Equal(mac(key, &a, "/p"), mac(key, &b, "/p")) {
		t.Error("host|node boundary is ambiguous")
	}
	c := a
	c.Nonce = "n/p"
	if hmac.Equal(mac(key, &a, "/p/x"), mac(key, &c, "/x")) {
		t.Error("nonce|path boundary is ambiguous")
	}
}
