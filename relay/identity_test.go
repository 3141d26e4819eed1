package relay

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"
)

func TestIdentityRestoredBehindRelay(t *testing.T) {
	t.Parallel()
	dir := &dirMap{}
	a := startNode(t, "a", dir, withTLS()) // the client reaches a over TLS
	b := startNode(t, "b", dir)

	// Record the client's own address, which is what a sees as RemoteAddr.
	var (
		mu    sync.Mutex
		local string
	)
	tr := a.srv.Client().Transport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			mu.Lock()
			local = c.LocalAddr().String()
			mu.Unlock()
		}
		return c, err
	}
	t.Cleanup(tr.CloseIdleConnections)
	forged := http.Header{}
	forged.Set(headerClient, "198.51.100.1:1")
	forged.Set(headerScheme, "http")
	forged.Set(headerHost, "evil.example")
	forged.Set(headerNode, "b")
	forged.Set(headerSignature, "AAAA")
	forged.Set("Muster-Relay-Anything", "x")
	forged.Set("X-Forwarded-For", "198.51.100.2")

	c, served := dial(t, a, "/ws?node=b", dialOpts{
		client: &http.Client{Transport: tr},
		host:   "play.example.test",
		header: forged,
	})
	defer c.CloseNow()
	if served != "b" {
		t.Fatalf("served by %q, want b (client-sent relay headers must not stop the relay)", served)
	}
	got := recv(t, b.seen, "request at b")
	mu.Lock()
	want := seen{
		Path:        "/ws",
		RemoteAddr:  local,
		Host:        "play.example.test",
		Scheme:      "https",
		Relayed:     true,
		Offered:     nil,
		Subprotocol: "",
	}
	mu.Unlock()
	if got.RemoteAddr != want.RemoteAddr || got.Host != want.Host || got.Scheme != want.Scheme ||
		got.Relayed != want.Relayed || got.Path != want.Path || len(got.RelayHeaders) != 0 {
		t.Errorf("b saw %+v\nwant %+v", got, want)
	}
	if st := b.relay.Stats(); st.Verified != 1 || st.Rejected != 0 {
		t.Errorf("stats of b = %+v, want one verified header set", st)
	}
	// The relay appends the address it saw, as a proxy does: a node that
	// trusts this server's address in RealIP takes the client's address,
	// not one the client wrote, even where the signature fails.
	if host, _, _ := net.SplitHostPort(want.RemoteAddr); got.ForwardedFor != "198.51.100.2, "+host {
		t.Errorf("b saw X-Forwarded-For %q, want the client's %q then %s", got.ForwardedFor, "198.51.100.2", host)
	}
}

func TestIdentityHeaders(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	key := deriveKey(testSecret)
	client := netip.MustParseAddrPort("203.0.113.7:5555")
	valid := func() signed { return sign(key, client, "https", "play.example.com", "b", "/ws", now) }
	with := func(edit func(*signed)) func() http.Header {
		return func() http.Header {
			s := valid()
			edit(&s)
			h := http.Header{}
			s.setHeaders(h)
			return h
		}
	}

	cases := []struct {
		name        string
		path        string // default /ws
		header      func() http.Header
		noSecret    bool
		wantRelayed bool
	}{
		{name: "valid", header: with(func(*signed) {}), wantRelayed: true},
		{name: "valid, oldest accepted", header: with(func(s *signed) {
			*s = sign(key, client, "https", "play.example.com", "b", "/ws", now.Add(-DefaultMaxSkew))
		}), wantRelayed: true},
		{name: "valid, IPv6 client", header: with(func(s *signed) {
			*s = sign(key, netip.MustParseAddrPort("[2001:db8::7]:443"), "http", "h", "b", "/ws", now)
		}), wantRelayed: true},
		{name: "stale", header: with(func(s *signed) {
			*s = sign(key, client, "https", "play.example.com", "b", "/ws", now.Add(-DefaultMaxSkew-time.Second))
		})},
		{name: "from the future", header: with(func(s *signed) {
			*s = sign(key, client, "https", "play.example.com", "b", "/ws", now.Add(DefaultMaxSkew+time.Second))
		})},
		{name: "wrong target", header: with(func(s *signed) {
			*s = sign(key, client, "https", "play.example.com", "c", "/ws", now)
		})},
		{name: "wrong target relabelled", header: with(func(s *signed) {
			*s = sign(key, client, "https", "play.example.com", "c", "/ws", now)
			s.Node = "b"
		})},
		{name: "wrong path", path: "/admin", header: with(func(*signed) {})},
		{name: "other secret", header: with(func(s *signed) {
			*s = sign(deriveKey("another secret, long enough"), client, "https", "play.example.com", "b", "/ws", now)
		})},
		{name: "client rewritten", header: with(func(s *signed) { s.Client = "198.51.100.1:5555" })},
		{name: "scheme rewritten", header: with(func(s *signed) { s.Scheme = "http" })},
		{name: "host rewritten", header: with(func(s *signed) { s.Host = "evil.example" })},
		{name: "time rewritten", header: with(func(s *signed) { s.Time = "1800000001" })},
		{name: "nonce rewritten", header: with(func(s *signed) { s.Nonce = "AAAAAAAAAAAAAAAAAAAAAA" })},
		{name: "signature flipped", header: with(func(s *signed) {
			b := []byte(s.Signature)
			b[0] ^= 1
			s.Signature = string(b)
		})},
		{name: "signature not base64", header: with(func(s *signed) { s.Signature = "!!" })},
		{name: "nonce missing", header: func() http.Header {
			h := with(func(*signed) {})()
			h.Del(headerNonce)
			return h
		}},
		{name: "header repeated", header: func() http.Header {
			h := with(func(*signed) {})()
			h.Add(headerClient, "198.51.100.1:1")
			return h
		}},
		{name: "sent by a client", header: func() http.Header {
			h := http.Header{}
			h.Set(headerClient, "198.51.100.1:1")
			h.Set("Muster-Relay-Debug", "1")
			return h
		}},
		{name: "receiver has no secret", noSecret: true, header: with(func(*signed) {})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			secret := testSecret
			if tc.noSecret {
				secret = ""
			}
			_, serve := receiver(t, secret, now)
			path := tc.path
			if path == "" {
				path = "/ws"
			}
			got := serve(path, tc.header())

			if len(got.RelayHeaders) != 0 {
				t.Errorf("handler saw relay headers %q", got.RelayHeaders)
			}
			if got.Relayed != tc.wantRelayed {
				t.Fatalf("FromRelay = %v, want %v", got.Relayed, tc.wantRelayed)
			}
			want := seen{RemoteAddr: "127.0.0.2:41000", Host: "game.internal:8000", Scheme: "http"}
			if tc.wantRelayed {
				s, _ := takeHeaders(tc.header())
				want = seen{RemoteAddr: s.Client, Host: s.Host, Scheme: s.Scheme}
			}
			if got.RemoteAddr != want.RemoteAddr || got.Host != want.Host || got.Scheme != want.Scheme {
				t.Errorf("handler saw %s %s %s, want %s %s %s",
					got.RemoteAddr, got.Host, got.Scheme, want.RemoteAddr, want.Host, want.Scheme)
			}
		})
	}
}

func TestClientAddr(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want string // "" means not parsed
	}{
		{"127.0.0.1:5000", "127.0.0.1:5000"},
		{"[::1]:5000", "[::1]:5000"},
		{"[::ffff:10.1.2.3]:80", "10.1.2.3:80"},
		{"127.0.0.1", "127.0.0.1:0"}, // as chi's RealIP leaves it
		{"2001:db8::1", "[2001:db8::1]:0"},
		{"[2001:db8::1]", "[2001:db8::1]:0"},
		{"pipe", ""},
		{"", ""},
		{"host.example:80", ""},
	}
	for _, tc := range cases {
		got, ok := clientAddr(tc.in)
		if (tc.want == "") == ok || ok && got.String() != tc.want {
			t.Errorf("clientAddr(%q) = %v, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
}

func TestUnparsableRemoteAddrServedLocally(t *testing.T) {
	t.Parallel()
	dir := &dirMap{}
	b := startNode(t, "b", dir)
	rl, err := New(Config{NodeID: "a", Secret: testSecret}, dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer rl.Close()
	local := false
	h := rl.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { local = true }))
	req := httptest.NewRequest(http.MethodGet, "/ws?node=b", nil)
	req.RemoteAddr = "@unix"
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if !local {
		t.Error("a request from an address that cannot be signed was not served locally")
	}
	if st := b.relay.Stats(); st.Verified != 0 {
		t.Errorf("b verified %d relayed requests, want 0", st.Verified)
	}
}

// TestRejectedCountsOnlySignatures: a relay header a client made up
// without a signature is stripped and not counted as a rejected
// signature (an alert on forged signatures fired on any Muster-Relay-Foo);
// a signature that does not verify still is.
func TestRejectedCountsOnlySignatures(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	rl, serve := receiver(t, testSecret, now)
	send := func(header http.Header) {
		t.Helper()
		if got := serve("/ws", header); len(got.RelayHeaders) != 0 || got.Relayed {
			t.Fatalf("handler saw relay headers %q, relayed %v", got.RelayHeaders, got.Relayed)
		}
	}
	for _, header := range []http.Header{
		{"Muster-Relay-Foo": {"1"}},
		{"muster-relay-debug": {"x"}},
		{headerClient: {"198.51.100.1:1"}, headerNode: {"b"}},
	} {
		send(header)
	}
	if st := rl.Stats(); st.Rejected != 0 {
		t.Errorf("headers without a signature counted %d rejected signatures, want 0", st.Rejected)
	}
	s := sign(deriveKey("another secret, long enough"), netip.MustParseAddrPort("203.0.113.7:5555"), "https", "play.example.com", "b", "/ws", now)
	forged := http.Header{}
	s.setHeaders(forged)
	send(forged)
	send(http.Header{headerSignature: {"AAAA"}})
	send(http.Header{"muster-relay-signature": {"AAAA"}, "Muster-Relay-Foo": {"1"}})
	if st := rl.Stats(); st.Rejected != 3 {
		t.Errorf("three forged signatures counted %d rejected, want 3", st.Rejected)
	}
}
