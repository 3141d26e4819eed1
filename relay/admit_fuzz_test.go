package relay

import (
	"crypto/hmac"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// FuzzAdmit sends relay headers a client or proxy made up: none reaches the
// handler, and only a complete set with a valid MAC makes a request relayed.
func FuzzAdmit(f *testing.F) {
	now, key := time.Unix(1_800_000_000, 0), deriveKey(testSecret)
	h, b := http.Header{}, &strings.Builder{}
	s := sign(key, netip.MustParseAddrPort("198.51.100.1:5"), "https", "play.example", "b", "/ws", now)
	s.setHeaders(h)
	h.Write(b)
	good := strings.ReplaceAll(strings.TrimSpace(b.String()), "\r\n", "\n")
	f.Add(good)
	f.Add(good + "\nmuster-relay-node: b\nMuster-Relay-Client: 10.0.0.1:1")
	rl, err := New(Config{NodeID: "b", Secret: testSecret}, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { rl.Close() })
	rl.now = func() time.Time { return now }
	var got *http.Request
	mw := rl.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r }))
	f.Fuzz(func(t *testing.T, headers string) {
		got = nil
		req := httptest.NewRequest("GET", "http://game.internal/ws", nil)
		req.RemoteAddr = "127.0.0.2:41000"
		for _, line := range strings.Split(headers, "\n") {
			k, v, _ := strings.Cut(line, ": ")
			req.Header[k] = append(req.Header[k], v)
		}
		s, complete := takeHeaders(req.Header.Clone())
		sig, err := base64.RawURLEncoding.DecodeString(s.Signature)
		valid := complete && err == nil && hmac.Equal(sig, mac(key, &s, "/ws"))
		mw.ServeHTTP(httptest.NewRecorder(), req)
		if got == nil {
			return // refused: the handler saw nothing
		}
		for k := range got.Header {
			if hasRelayPrefix(k) {
				t.Fatalf("handler saw %q", k)
			}
		}
		if _, err := netip.ParseAddrPort(got.RemoteAddr); FromRelay(got) && (!valid || err != nil) {
			t.Fatalf("relayed from %q, MAC valid %v", got.RemoteAddr, valid)
		}
	})
}
