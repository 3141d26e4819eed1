package relay

import (
	"bytes"
	"context"
	"crypto/rand"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/testrun"
)

func TestRelayMessagesBothWays(t *testing.T) {
	t.Parallel()
	a, b := startPair(t)

	offer := []string{"v1.echo", "v2.echo", "x.other"}
	c := dialRelayed(t, a, b, dialOpts{subprotocols: offer})
	got := recv(t, b.seen, "request at b")
	if !got.Relayed {
		t.Errorf("b: FromRelay = false, want true")
	}
	if !slices.Equal(got.Offered, offer) {
		t.Errorf("b saw subprotocols offered %q, want %q", got.Offered, offer)
	}
	// The echo handler prefers v2.echo; the client must end up with it.
	if got.Subprotocol != "v2.echo" || c.Subprotocol() != "v2.echo" {
		t.Errorf("subprotocol: b chose %q, client got %q, want v2.echo", got.Subprotocol, c.Subprotocol())
	}

	big := make([]byte, 1<<20)
	rand.Read(big)
	bigText := strings.Repeat("muster relay é ", (1<<20)/16)
	cases := []struct {
		name string
		typ  websocket.MessageType
		data []byte
	}{
		{"text", websocket.MessageText, []byte("hello")},
		{"binary", websocket.MessageBinary, []byte{0, 1, 2, 255}},
		{"empty text", websocket.MessageText, []byte{}},
		{"empty binary", websocket.MessageBinary, []byte{}},
		{"exactly one chunk", websocket.MessageBinary, big[:chunk]},
		{"one chunk and a byte", websocket.MessageBinary, big[:chunk+1]},
		{"1 MiB binary", websocket.MessageBinary, big},
		{"1 MiB text", websocket.MessageText, []byte(bigText)},
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	for _, tc := range cases {
		if err := c.Write(ctx, tc.typ, tc.data); err != nil {
			t.Fatalf("%s: write: %v", tc.name, err)
		}
		typ, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("%s: read: %v", tc.name, err)
		}
		if typ != tc.typ || !bytes.Equal(data, tc.data) {
			t.Errorf("%s: got %v message of %d bytes, want %v of %d", tc.name, typ, len(data), tc.typ, len(tc.data))
		}
	}
	if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Errorf("close: %v", err)
	}
	st := a.relay.Stats()
	var sent uint64
	for _, tc := range cases {
		sent += uint64(len(tc.data))
	}
	if st.Relayed != 1 || st.BytesToNode != sent || st.BytesToClient < sent {
		t.Errorf("stats of a = %+v, want 1 relayed, %d bytes to node, at least %d to client", st, sent, sent)
	}
	testrun.WaitFor(t, "no active relayed connection", func() bool { return a.relay.Stats().Active == 0 })
}

// TestHandshakeHeaders: the client's end-to-end headers reach the node and
// the node's handshake response headers reach the client; the node's own
// origin check sees the client's Origin and Host.
func TestHandshakeHeaders(t *testing.T) {
	t.Parallel()
	a, b := startPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	h := http.Header{}
	h.Set("Cookie", "session=abc")
	h.Set("Origin", "http://play.example.test")
	c, resp, err := websocket.Dial(ctx, "ws://"+a.addr+"/ws?node=b", &websocket.DialOptions{
		HTTPHeader: h,
		Host:       "play.example.test",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if got := resp.Header.Get("X-Node"); got != "b" {
		t.Errorf("handshake response X-Node = %q, want b", got)
	}
	got := recv(t, b.seen, "request at b")
	if got.Cookie != "session=abc" || got.Origin != "http://play.example.test" || got.Host != "play.example.test" {
		t.Errorf("b saw cookie %q, origin %q, host %q", got.Cookie, got.Origin, got.Host)
	}

	// A cross-origin upgrade that b refuses is not accepted by the relay
	// either: the client gets b's refusal.
	h.Set("Origin", "http://evil.example")
	_, resp, err = websocket.Dial(ctx, "ws://"+a.addr+"/ws?node=b", &websocket.DialOptions{HTTPHeader: h, Host: "play.example.test"})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin upgrade: %v, %v; want 403", resp, err)
	}
	if resp != nil && resp.Header.Get("X-Node") != "b" {
		t.Errorf("cross-origin upgrade answered by %q, want b", resp.Header.Get("X-Node"))
	}
	if st := a.relay.Stats(); st.Refused != 1 || st.Fallbacks != 0 {
		t.Errorf("stats of a = %+v, want 1 refused, no fallback", st)
	}
}
