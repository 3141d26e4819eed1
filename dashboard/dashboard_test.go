package dashboard_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/fleet"
)

// view is a fixed View.
type view struct {
	id    string
	nodes []fleet.Node
}

func (v view) Nodes() []fleet.Node { return v.nodes }
func (v view) ID() string          { return v.id }

func TestHandler(t *testing.T) {
	t.Parallel()
	v := view{id: "s0", nodes: []fleet.Node{
		{ID: "s0", Cluster: "c", Region: "eu-west", InternalAddress: "10.0.0.1:8080", PublicAddress: "s0.example.com",
			State: fleet.StateReady, Load: 12, MaxLoad: 200, Stats: map[string]int64{"queue:duel": 3, "rooms": 2}},
		{ID: "s1", InternalAddress: "10.0.0.2:8080", State: fleet.StateDraining, Load: 0, MaxLoad: 200},
	}}
	srv := httptest.NewServer(dashboard.Handler(v))
	defer srv.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	for _, tc := range []struct {
		name, method, path string
		status             int
		contentType        string
		contains           []string
		location           string
	}{
		{name: "page", method: "GET", path: dashboard.Path, status: 200, contentType: "text/html; charset=utf-8",
			contains: []string{`<script src="dashboard/app.js"`, `<tbody id="nodes">`}},
		{name: "script", method: "GET", path: dashboard.Path + "/app.js", status: 200, contentType: "text/javascript; charset=utf-8",
			contains: []string{`fetch("dashboard/nodes"`}},
		{name: "style", method: "GET", path: dashboard.Path + "/app.css", status: 200, contentType: "text/css; charset=utf-8"},
		{name: "feed", method: "GET", path: dashboard.PathNodes, status: 200, contentType: "application/json",
			contains: []string{`"self":"s0"`, `"queue:duel":3`}},
		{name: "trailing slash", method: "GET", path: dashboard.Path + "/", status: 301, location: dashboard.Path},
		{name: "head", method: "HEAD", path: dashboard.Path, status: 200, contentType: "text/html; charset=utf-8"},
		{name: "post", method: "POST", path: dashboard.PathNodes, status: 405},
		{name: "unknown", method: "GET", path: dashboard.Path + "/nope", status: 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			res, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d\n%s", res.StatusCode, tc.status, body)
			}
			if tc.contentType != "" && res.Header.Get("Content-Type") != tc.contentType {
				t.Errorf("Content-Type %q, want %q", res.Header.Get("Content-Type"), tc.contentType)
			}
			if tc.location != "" && res.Header.Get("Location") != tc.location {
				t.Errorf("Location %q, want %q", res.Header.Get("Location"), tc.location)
			}
			if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
			for _, s := range tc.contains {
				if !strings.Contains(string(body), s) {
					t.Errorf("body lacks %q", s)
				}
			}
		})
	}
}

// TestFeed decodes the feed: every server, its published record, and no
// internal address.
func TestFeed(t *testing.T) {
	t.Parallel()
	nodes := []fleet.Node{
		{ID: "a", Region: "eu", InternalAddress: "10.0.0.1:8080", State: fleet.StateFull, Load: 200, MaxLoad: 200,
			Stats: map[string]int64{"queue:duel": 1, "players": 7}},
	}
	rec := httptest.NewRecorder()
	dashboard.Handler(view{id: "a", nodes: nodes}).ServeHTTP(rec, httptest.NewRequest("GET", dashboard.PathNodes, nil))
	if strings.Contains(rec.Body.String(), "10.0.0.1") {
		t.Errorf("the feed shows an internal address: %s", rec.Body)
	}
	if got := rec.Header().Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control %q", got)
	}
	var snap dashboard.Snapshot
	if err := json.Unmarshal(rec.Body.Bytes(), &snap); err != nil {
		t.Fatal(err)
	}
	if snap.Self != "a" || snap.Time.IsZero() || len(snap.Nodes) != 1 {
		t.Fatalf("snapshot %+v", snap)
	}
	n := snap.Nodes[0]
	if n.ID != "a" || n.Region != "eu" || n.State != fleet.StateFull || n.Load != 200 || n.MaxLoad != 200 ||
		n.Stats["queue:duel"] != 1 || n.Stats["players"] != 7 {
		t.Errorf("node %+v", n)
	}
	// The feed decodes as fleet records too, for scripts that read both.
	var records struct{ Nodes []fleet.Node }
	if err := json.Unmarshal(rec.Body.Bytes(), &records); err != nil || records.Nodes[0].MaxLoad != 200 {
		t.Errorf("as fleet.Node: %+v, %v", records, err)
	}
}
