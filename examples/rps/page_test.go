package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// The page is served with the client library it imports, and asks it to
// keep a throw sent while reconnecting, an option that library has.
func TestPageAndClient(t *testing.T) {
	url, _ := serve(t, quick)
	for _, tc := range []struct{ path, has string }{
		{"", `<script type="module" src="app.js">`},
		{"app.js", `import { connect } from './client/muster.js'`},
		{"app.js", `whileReconnecting: 'last'`},
		{"client/muster.js", `whileReconnecting`},
	} {
		res, err := http.Get(url + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), tc.has) {
			t.Errorf("GET /%s: %s, %d bytes without %q", tc.path, res.Status, len(body), tc.has)
		}
	}
}
