package federation

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// The answers of a home that is fake or compromised: what the node and the
// Placer read from home must never panic, hang past their timeout, be read
// without bound, or put a key in an error.

// fakeAnswer is what a fakeHome sends: status, Content-Type (none when
// empty) and body; short declares ten bytes more than the body, so that
// the answer ends early.
type fakeAnswer struct {
	status      int
	contentType string
	body        []byte
	short       bool
}

// fakeHome is a loopback home that gives every request the answer it
// holds, whatever was asked.
type fakeHome struct {
	*httptest.Server
	mu  sync.Mutex
	ans fakeAnswer
}

// newFakeHome starts a fakeHome, closed when tb ends.
func newFakeHome(tb testing.TB) *fakeHome {
	h := &fakeHome{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		a := h.ans
		h.mu.Unlock()
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<16))
		if a.contentType != "" {
			w.Header().Set("Content-Type", a.contentType)
		}
		if a.short {
			w.Header().Set("Content-Length", strconv.Itoa(len(a.body)+10))
		}
		w.WriteHeader(a.status)
		_, _ = w.Write(a.body)
	}))
	tb.Cleanup(h.Close)
	return h
}

// answer sets what h answers from now on.
func (h *fakeHome) answer(a fakeAnswer) {
	h.mu.Lock()
	h.ans = a
	h.mu.Unlock()
}

// fuzzStatus maps a fuzzed number to a final HTTP status, 200 to 999
// (the 1xx answers are TestHomeAnswersBounded's).
func fuzzStatus(n uint16) int { return 200 + int(n)%800 }

// headerText keeps the bytes of s a header value may hold.
func headerText(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' && r != '\t' || r == 0x7f || r == '\uFFFD' {
			return -1
		}
		return r
	}, s)
}

// checkNoKey fails t when err quotes key, or, for a 2xx answer (home's
// message is not in the error then), any key at all.
func checkNoKey(t *testing.T, err error, key string, status int) {
	t.Helper()
	if err == nil {
		return
	}
	msg := err.Error()
	if strings.Contains(msg, key) {
		t.Fatalf("the key is in the error: %v", err)
	}
	if status/100 == 2 && (strings.Contains(msg, serverKeyPrefix) || strings.Contains(msg, nodeKeyPrefix)) {
		t.Fatalf("a key from a 2xx answer is in the error: %v", err)
	}
}

// FuzzDoJSON sends a request to a home whose answer (status, Content-Type,
// body, cut short or not) is fuzzed, and decodes it as each answer the
// node and the Placer read: no panic; success only for a complete 2xx
// answer that is valid JSON; any other status a *HomeError with it; and
// the key sent never in the error.
func FuzzDoJSON(f *testing.F) {
	home := newFakeHome(f)
	c := home.Client()
	key := newKey(kindServer)
	outs := []func() any{
		func() any { return new(joinResponse) },
		func() any { return new(Announcement) },
		func() any { return new(roomResponse) },
		func() any { return new(selfTestResponse) },
		func() any { return new(RegionList) },
		func() any { return nil },
	}
	seeds := []struct {
		status int
		ct     string
		body   string
		out    uint8
		short  bool
	}{
		{201, "application/json", `{"node_id":"au","server_id":"au-0a1b2c3d","server_key":"` + newKey(kindServer) + `","announce_every_seconds":60}`, 0, false},
		{201, "application/json", `{"node_id":"au","server_id":"au-0a1b2c3d","server_key":"` + newKey(kindServer) + `","announce_every_seconds":"x"}`, 0, false},
		{200, "application/json", `{"node_id":"au","approved":true,"self_test":{"due_in_seconds":-1,"bytes":4194304}}`, 1, false},
		{200, "application/json", `{"stored":true}`, 2, false},
		{200, "application/json", `{"stored":true}`, 2, true},
		{200, "application/json", `{"bytes":1,"bytes_per_second":1e308,"passed":true,"next_due_in_seconds":86400}`, 3, false},
		{200, "application/json", `{"home":{"game":"h:1"},"regions":[{"node":"au","country":"AU","services":{"game":["a:1"]}}]}`, 4, false},
		{200, "", `ok`, 5, false},
		{200, "text/html", `<html>`, 2, false},
		{204, "", ``, 2, false},
		{304, "", ``, 2, false},
		{302, "", `{}`, 2, false},
		{401, "application/json", `{"error":"revoked","code":"revoked"}`, 1, false},
		{403, "application/json", `{"error":"x","code":"wrong_node"}`, 2, false},
		{500, "text/plain", `internal`, 4, false},
		{503, "application/json", `{"error":`, 1, true},
		{999, "x/y; charset=\u00ff", `{}`, 0, false},
		{200, "application/json", `{"stored":true} {"stored":false}`, 2, false},
		{200, "application/json", "\xef\xbb\xbf{}", 2, false},
		{200, "application/json", `[` + strings.Repeat(`[`, 20000), 4, false},
	}
	for _, s := range seeds {
		f.Add(uint16(s.status-200), s.ct, []byte(s.body), s.out, s.short)
	}
	f.Fuzz(func(t *testing.T, n uint16, contentType string, body []byte, which uint8, short bool) {
		status := fuzzStatus(n)
		home.answer(fakeAnswer{status: status, contentType: headerText(contentType), body: body, short: short})
		out := outs[int(which)%len(outs)]()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, home.URL+PathRooms, strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		err = doJSON(c, req, out)
		ok := status/100 == 2
		if err == nil {
			if !ok {
				t.Fatalf("%d %q accepted", status, body)
			}
			if out != nil && (short || !json.Valid(body)) {
				t.Fatalf("%d %q (short %v) decoded into %T", status, body, short, out)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%d %q: no answer within 10s: %v", status, body, err)
		}
		checkNoKey(t, err, key, status)
		var he *HomeError
		switch {
		case errors.As(err, &he):
			if ok || he.Status != status {
				t.Fatalf("%d answered as %v", status, err)
			}
			checkPrintable(t, "code", he.Code, maxErrorCode)
			checkPrintable(t, "message", he.Message, maxErrorMessage)
		case !ok && !short:
			t.Fatalf("%d %q: %v, not a *HomeError", status, body, err)
		}
	})
}

// FuzzNodeStep runs the agent's step (announce, a self-test when home
// says one is due, and the resending of a pending room report) against a
// home whose every answer is fuzzed: no panic, an error only when home
// refuses the server for good, never the server key in it, and the
// snapshot kept unless home answered it.
func FuzzNodeStep(f *testing.F) {
	home := newFakeHome(f)
	key := newKey(kindServer)
	n, err := NewNode(NodeConfig{
		HomeURL: home.URL, KeyFile: filepath.Join(f.TempDir(), "key"),
		Timeout: 10 * time.Second, SelfTestTimeout: 10 * time.Second,
		HTTPClient: home.Client(), Hardware: func() Hardware { return Hardware{OS: "linux"} },
	}, quiet())
	if err != nil {
		f.Fatal(err)
	}
	n.cred = &serverCredential{NodeID: "au-sydney", ServerID: "au-sydney-0a1b2c3d", ServerKey: key}
	for _, s := range []string{
		`{"node_id":"au-sydney","approved":true,"self_test":{"due_in_seconds":3600,"bytes":4194304},"stored":true}`,
		`{"self_test":{"due_in_seconds":0,"bytes":100000}}`,
		`{"self_test":{"due_in_seconds":-1e308,"bytes":9223372036854775807}}`,
		`{"self_test":{"due_in_seconds":0,"bytes":-1}}`,
		`{"error":"gone","code":"revoked"}`, `{"code":"not_announced"}`, `null`, ``,
	} {
		f.Add(uint16(0), []byte(s))
		f.Add(uint16(401-200), []byte(s))
		f.Add(uint16(409-200), []byte(s))
	}
	f.Fuzz(func(t *testing.T, st uint16, body []byte) {
		status := fuzzStatus(st)
		home.answer(fakeAnswer{status: status, contentType: "application/json", body: body})
		n.mu.Lock()
		n.pending = map[string]pendingReport{"r1": {report: RoomReport{RoomID: "r1", Members: []string{"a"}}, seq: n.seq.Add(1)}}
		n.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		announced, err := n.step(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d %q: step did not end within 30s", status, body)
		}
		if err != nil && !fatal(err) {
			t.Fatalf("%d %q: step failed with %v, which is not for good", status, body, err)
		}
		checkNoKey(t, err, key, status)
		n.mu.Lock()
		_, kept := n.pending["r1"]
		n.mu.Unlock()
		// The report had home's answer too: only a 2xx answer that
		// decodes settles it.
		var rr roomResponse
		settled := announced && json.Unmarshal(body, &rr) == nil
		if kept == settled {
			t.Fatalf("%d %q: announced %v, the snapshot kept %v", status, body, announced, kept)
		}
	})
}

// FuzzPlacerRegions polls a regions list that is fuzzed and places a room
// with it: no panic; a failed poll leaves no list; and a room goes home
// or to a game server the list names for the creator's country.
func FuzzPlacerRegions(f *testing.F) {
	home := newFakeHome(f)
	homeGame := "home.example:1"
	for _, s := range []string{
		`{"home":{"game":"h:1"},"regions":[{"node":"au","country":"AU","services":{"game":["a:1","a:2"],"turn":["t:1"]}}]}`,
		`{"regions":[{"node":"au","country":"au","services":{"photon":["p:1"]}},{"node":"nz","country":"AU","services":null}]}`,
		`{"regions":[{"node":"x","country":"AU","services":{"game":[""]}}]}`,
		`{"regions":null}`, `{"regions":[null]}`, `[]`, `{`,
	} {
		f.Add(uint16(0), []byte(s), "AU")
	}
	f.Fuzz(func(t *testing.T, st uint16, body []byte, country string) {
		status := fuzzStatus(st)
		home.answer(fakeAnswer{status: status, contentType: "application/json", body: body})
		p, err := NewPlacer(PlacerConfig{HomeURL: home.URL, HTTPClient: home.Client(), HomeServices: map[string]string{ServiceGame: homeGame}}, quiet())
		if err != nil {
			t.Fatal(err)
		}
		p.step(context.Background(), time.Now())
		regions := p.Regions()
		if status/100 != 2 && regions != nil {
			t.Fatalf("%d %q: a failed poll left %+v", status, body, regions)
		}
		pl := p.Place(RoomInfo{ID: "room-1"}, country)
		_ = p.ICEServers(country, "player-1")
		if pl.Home() {
			if pl.Address != homeGame && !slices.ContainsFunc(regions, func(r Region) bool { return r.Node == "" }) {
				t.Fatalf("%q: placed at home at %q", body, pl.Address)
			}
			return
		}
		c, _ := normCountry(country)
		if !slices.ContainsFunc(regions, func(r Region) bool {
			return r.Node == pl.Node && r.Country == c && slices.Contains(gameServers(r), pl.Address)
		}) {
			t.Fatalf("%q, %q: placed at %+v, which the list does not give", body, country, pl)
		}
	})
}

// FuzzNodeJoinAnswer joins through a home whose answer is fuzzed: no
// panic, never the node key in the error, and a credential only with a
// server key, a server id and a node id that are well formed, for the key
// file keeps them and every later request carries them.
func FuzzNodeJoinAnswer(f *testing.F) {
	home := newFakeHome(f)
	nodeKey := newKey(kindNode)
	n, err := NewNode(NodeConfig{
		HomeURL: home.URL, NodeKey: nodeKey, KeyFile: filepath.Join(f.TempDir(), "key"),
		Timeout: 10 * time.Second, HTTPClient: home.Client(),
		Hardware: func() Hardware { return Hardware{Hostname: "syd-1"} },
	}, quiet())
	if err != nil {
		f.Fatal(err)
	}
	sk := newKey(kindServer)
	for _, s := range []string{
		`{"node_id":"au-sydney","server_id":"au-sydney-0a1b2c3d","server_key":"` + sk + `","announce_every_seconds":60}`,
		`{"node_id":"","server_id":"au-sydney-0a1b2c3d","server_key":"` + sk + `"}`,
		`{"server_id":"au-sydney-0a1b2c3d","server_key":"` + sk + `"}`,
		`{"node_id":"au\n[ERROR] forged","server_id":"au-sydney-0a1b2c3d","server_key":"` + sk + `"}`,
		`{"node_id":"../../etc","server_id":"au-sydney-0a1b2c3d","server_key":"` + sk + `"}`,
		`{"node_id":"au-sydney","server_id":"AU SYDNEY","server_key":"` + sk + `"}`,
		`{"node_id":"au-sydney","server_id":"au-sydney-0a1b2c3d","server_key":"` + newKey(kindNode) + `"}`,
		`{"node_id":"au-sydney","server_id":"au-sydney-0a1b2c3d","server_key":"` + sk + `x"}`,
		`{"error":"no","code":"too_many_servers"}`, `{}`, `null`, `[]`,
	} {
		f.Add(uint16(1), []byte(s))
		f.Add(uint16(409-200), []byte(s))
	}
	f.Fuzz(func(t *testing.T, st uint16, body []byte) {
		status := fuzzStatus(st)
		home.answer(fakeAnswer{status: status, contentType: "application/json", body: body})
		cred, err := n.join(context.Background())
		if err != nil {
			checkNoKey(t, err, nodeKey, status)
			return
		}
		if !validKeyFormat(cred.ServerKey, kindServer) || !validID(cred.ServerID) || !validID(cred.NodeID) {
			t.Fatalf("%d %q: joined as %+v", status, body, cred)
		}
	})
}

// TestHomeAnswersBounded: whatever home answers, a request of the node
// ends within the node's Timeout, and only a whole answer is taken.
func TestHomeAnswersBounded(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	tests := []struct {
		name string
		// serve answers; it must return once done is closed.
		serve func(t *testing.T, w http.ResponseWriter, r *http.Request, done <-chan struct{})
		ok    bool // the answer is a whole {"stored":true}
	}{
		{"early hints, then the answer", func(t *testing.T, w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
			w.Header().Set("Link", "</x>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"stored":true}`)
		}, true},
		{"stalls halfway", func(t *testing.T, w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
			_, _ = io.WriteString(w, `{"stored":`)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-done:
			}
		}, false},
		{"over 1 MiB", func(t *testing.T, w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
			_, _ = io.WriteString(w, `{"stored":true}`+strings.Repeat(" ", 1<<20))
		}, false},
		{"never ends", func(t *testing.T, w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
			_, _ = io.WriteString(w, `{"stored":true}`)
			pad := []byte(strings.Repeat(" ", 64<<10))
			for written := 0; ; written += len(pad) {
				if written > 64<<20 {
					t.Errorf("the node read %d bytes of an endless answer", written)
					return
				}
				select {
				case <-done:
					return
				default:
				}
				if _, err := w.Write(pad); err != nil {
					return
				}
			}
		}, false},
		// After 101 the body is the connection itself, which the
		// request's context does not end.
		{"switching protocols", func(t *testing.T, w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
			w.Header().Set("Connection", "Upgrade")
			w.Header().Set("Upgrade", "muster")
			w.WriteHeader(http.StatusSwitchingProtocols)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-done:
			}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			done := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tt.serve(t, w, r, done) }))
			t.Cleanup(srv.Close)
			t.Cleanup(func() { close(done) })
			n, err := NewNode(NodeConfig{HomeURL: srv.URL, KeyFile: filepath.Join(t.TempDir(), "key"), Timeout: timeout, HTTPClient: srv.Client()}, quiet())
			if err != nil {
				t.Fatal(err)
			}
			key := newKey(kindServer)
			var res roomResponse
			errc := make(chan error, 1)
			go func() { errc <- n.postJSON(context.Background(), PathRooms, key, report("r1", 1, "a"), &res) }()
			select {
			case err = <-errc:
			case <-time.After(timeout + 5*time.Second):
				t.Fatalf("no end 5s past the node's Timeout (%v)", timeout)
			}
			checkNoKey(t, err, key, 0)
			switch {
			case tt.ok && (err != nil || !res.Stored):
				t.Fatalf("got %+v, %v; want stored", res, err)
			case !tt.ok && err == nil:
				t.Fatalf("took %+v from an answer that is not whole", res)
			}
		})
	}
}

// checkPrintable fails t unless s, what home said in an error answer, is
// one line of valid UTF-8 of at most max bytes.
func checkPrintable(t *testing.T, what, s string, max int) {
	t.Helper()
	if len(s) > max || !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) {
		t.Fatalf("home's error %s taken as %d bytes: %.80q", what, len(s), s)
	}
}

// An error answer of home's may say anything; a HomeError carries at most
// a short line of it into errors and logs.
func TestHomeErrorBounded(t *testing.T) {
	t.Parallel()
	home := newFakeHome(t)
	long := strings.Repeat("é\n\x1b[31m", 30_000) // 420 kB of JSON, under maxAnswer
	body, err := json.Marshal(errorBody{Code: strings.Repeat("c", 1000), Error: long + "\xff"})
	if err != nil {
		t.Fatal(err)
	}
	home.answer(fakeAnswer{status: http.StatusForbidden, contentType: "application/json", body: body})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, home.URL+PathRooms, strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var he *HomeError
	if err := doJSON(home.Client(), req, nil); !errors.As(err, &he) {
		t.Fatalf("got %v, want a HomeError", err)
	}
	checkPrintable(t, "code", he.Code, maxErrorCode)
	checkPrintable(t, "message", he.Message, maxErrorMessage)
	if !strings.HasPrefix(he.Message, "é\uFFFD\uFFFD[31mé") {
		t.Errorf("message %.40q, want its start kept, control characters replaced", he.Message)
	}
}
