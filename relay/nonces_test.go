package relay

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

// TestRelayHeadersValidOnce sends one set of signed relay headers to a
// node three times, as someone who captured it between two servers would:
// as it was, with another query, and after the window. Only the first
// request gets the client's identity; the others are served as requests
// from the address that sent them.
func TestRelayHeadersValidOnce(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	s := sign(deriveKey(testSecret), netip.MustParseAddrPort("203.0.113.7:5555"), "https", "play.example.com", "b", "/ws", now)
	rl, serve := receiver(t, testSecret, now)
	header := http.Header{}
	s.setHeaders(header)
	send := func(target string) seen { return serve(target, header) }

	if first := send("/ws?ticket=t1"); !first.Relayed || first.RemoteAddr != "203.0.113.7:5555" {
		t.Fatalf("first use: relayed %v from %s, want the signed client", first.Relayed, first.RemoteAddr)
	}
	for _, target := range []string{"/ws?ticket=t1", "/ws?ticket=t2"} {
		again := send(target)
		if again.Relayed || again.RemoteAddr != "127.0.0.2:41000" || again.Host != "game.internal:8000" {
			t.Errorf("%s sent again: relayed %v from %s for %s, want a request from its sender",
				target, again.Relayed, again.RemoteAddr, again.Host)
		}
	}
	if st := rl.Stats(); st.Verified != 1 || st.Rejected != 2 {
		t.Errorf("stats %+v, want 1 verified and 2 rejected", st)
	}
}

func TestNonces(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	nonce := func(i uint64) string {
		var b [nonceLen]byte
		binary.BigEndian.PutUint64(b[:], i)
		return base64.RawURLEncoding.EncodeToString(b[:])
	}
	var n nonces
	if err := n.use(nonce(1), now, time.Minute); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if err := n.use(nonce(1), now.Add(time.Minute-time.Nanosecond), time.Minute); !errors.Is(err, errReplayed) {
		t.Fatalf("second use within the minute: %v, want errReplayed", err)
	}
	if err := n.use(nonce(1), now.Add(time.Minute), time.Minute); err != nil {
		t.Fatalf("use after the minute: %v", err)
	}
	// Another spelling of the same bytes is the same nonce.
	if err := n.use(nonce(1)[:21]+"B", now.Add(time.Minute), time.Minute); !errors.Is(err, errReplayed) {
		t.Fatalf("the nonce in another spelling: %v, want errReplayed", err)
	}
	for _, bad := range []string{"", "AAAA", nonce(1) + "A", "!!!!!!!!!!!!!!!!!!!!!!"} {
		if err := n.use(bad, now, time.Minute); !errors.Is(err, errMalformed) {
			t.Errorf("use(%q) = %v, want errMalformed", bad, err)
		}
	}

	// Full, a Relay refuses new nonces until old ones expire.
	var full nonces
	for i := range uint64(maxNonces) {
		if err := full.use(nonce(i), now, time.Minute); err != nil {
			t.Fatalf("nonce %d of %d: %v", i, maxNonces, err)
		}
	}
	if err := full.use(nonce(maxNonces), now, time.Minute); !errors.Is(err, errTooMany) {
		t.Fatalf("one more than the bound: %v, want errTooMany", err)
	}
	if err := full.use(nonce(maxNonces), now.Add(time.Minute), time.Minute); err != nil {
		t.Fatalf("after the others expired: %v", err)
	}
	if len(full.seen) != 1 {
		t.Errorf("%d nonces remembered after the others expired, want 1", len(full.seen))
	}
}

// FuzzNonces: use never panics, accepts only a well-formed nonce, and
// accepts one nonce once within its time.
func FuzzNonces(f *testing.F) {
	f.Add("AAAAAAAAAAAAAAAAAAAAAA")
	f.Add("AAAAAAAAAAAAAAAAAAAAAQ")
	f.Add("_-_-_-_-_-_-_-_-_-_-_-")
	f.Fuzz(func(t *testing.T, nonce string) {
		var n nonces
		now := time.Unix(1_800_000_000, 0)
		err := n.use(nonce, now, time.Minute)
		raw, decErr := base64.RawURLEncoding.DecodeString(nonce)
		// The decoder skips newlines; a nonce has none.
		wellFormed := len(nonce) == base64.RawURLEncoding.EncodedLen(nonceLen) && decErr == nil && len(raw) == nonceLen
		if wellFormed != (err == nil) {
			t.Fatalf("use(%q) = %v, well-formed %v", nonce, err, wellFormed)
		}
		if err == nil {
			if again := n.use(nonce, now, time.Minute); !errors.Is(again, errReplayed) {
				t.Fatalf("second use of %q: %v, want errReplayed", nonce, again)
			}
		}
	})
}
