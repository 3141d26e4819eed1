package relay

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestFallbackServesLocally(t *testing.T) {
	t.Parallel()
	dir := &dirMap{}
	// Every target of a here is one it must give up on, so a short dial
	// timeout cannot turn a relay into a fallback.
	a := startNode(t, "a", dir, withDialTimeout(300*time.Millisecond))
	startNode(t, "b", dir)
	dir.set("dead", deadAddr(t))
	dir.set("silent", silentAddr(t))
	dir.set("empty", "")
	// A node's 5xx is its own failure (a draining node's 503): the client
	// is served here. A 4xx is the node's refusal of the client, passed
	// on (TestNodeRefusalPassedOn).
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "draining", http.StatusServiceUnavailable)
	}))
	t.Cleanup(failing.Close)
	dir.set("failing", failing.Listener.Addr().String())
	redirecting := httptest.NewServer(http.RedirectHandler("/elsewhere", http.StatusFound))
	t.Cleanup(redirecting.Close)
	dir.set("redirecting", redirecting.Listener.Addr().String())

	cases := []struct {
		name, path string
		fallback   bool // counts as a failed relay attempt
	}{
		{"no parameter", "/ws", false},
		{"empty parameter", "/ws?node=", false},
		{"self", "/ws?node=a", false},
		{"unknown", "/ws?node=zz", false},
		{"no address", "/ws?node=empty", false},
		{"dead", "/ws?node=dead", true},
		{"accepts but never answers", "/ws?node=silent", true},
		{"fails the handshake", "/ws?node=failing", true},
		{"redirects the handshake", "/ws?node=redirecting", true},
		{"other parameter name", "/ws?n=b", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := a.relay.Stats().Fallbacks
			c, served := dial(t, a, tc.path, dialOpts{})
			if served != "a" {
				t.Errorf("served by %q, want a", served)
			}
			c.CloseNow()
			if got := a.relay.Stats().Fallbacks - before; tc.fallback != (got == 1) {
				t.Errorf("fallbacks counted %d, want fallback=%v", got, tc.fallback)
			}
		})
	}
}

func TestPlainRequestsAreNotRelayed(t *testing.T) {
	t.Parallel()
	a, _ := startPair(t)
	resp, err := http.Get("http://" + a.addr + "/who?node=b")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body [64]byte
	n, _ := resp.Body.Read(body[:])
	if got := string(body[:n]); len(got) < 6 || got[:6] != "node=a" {
		t.Errorf("GET /who?node=b at a answered %q, want it served by a", got)
	}
}

func TestNoSecretRelaysNothing(t *testing.T) {
	t.Parallel()
	dir := &dirMap{}
	a := startNode(t, "a", dir, withSecret(""))
	startNode(t, "b", dir, withSecret(""))
	c, served := dial(t, a, "/ws?node=b", dialOpts{})
	defer c.CloseNow()
	if served != "a" {
		t.Errorf("without a secret the request was served by %q, want a", served)
	}
	if st := a.relay.Stats(); st.Relayed != 0 || st.Fallbacks != 0 {
		t.Errorf("stats = %+v, want no relay attempt", st)
	}
}

// TestNoRelayLoop: a directory entry whose address now belongs to another
// server (c took over b's old address) must not make c relay the request on.
func TestNoRelayLoop(t *testing.T) {
	t.Parallel()
	dirA, dirC := &dirMap{}, &dirMap{}
	a := startNode(t, "a", dirA)
	c := startNode(t, "c", dirC)
	dirA.set("b", c.addr)
	dirC.set("b", c.addr) // c's view is just as stale: relaying would loop
	conn, served := dial(t, a, "/ws?node=b", dialOpts{})
	defer conn.CloseNow()
	if served != "c" {
		t.Fatalf("served by %q, want c", served)
	}
	got := recv(t, c.seen, "request at c")
	if got.Relayed || len(got.RelayHeaders) != 0 {
		t.Errorf("c accepted a signature made for b: %+v", got)
	}
	if st := c.relay.Stats(); st.Relayed != 0 || st.Rejected != 1 {
		t.Errorf("stats of c = %+v, want nothing relayed and one rejected header set", st)
	}
}
