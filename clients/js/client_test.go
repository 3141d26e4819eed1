package js_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/muster-gg/muster/clients/js"
)

// The embedded build is served as a JavaScript module, with its
// declarations beside it.
func TestHandler(t *testing.T) {
	srv := httptest.NewServer(http.StripPrefix("/client/", js.Handler()))
	defer srv.Close()
	for _, tc := range []struct {
		path, typ, has string
	}{
		{"/client/muster.js", "text/javascript", "export function connect("},
		{"/client/muster.d.ts", "", "export declare function connect"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			res, err := http.Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusOK || !strings.Contains(string(body), tc.has) {
				t.Fatalf("GET %s: %s, %d bytes without %q", tc.path, res.Status, len(body), tc.has)
			}
			if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, tc.typ) {
				t.Errorf("GET %s: Content-Type %q, want %s", tc.path, ct, tc.typ)
			}
		})
	}
	names, err := fs.Glob(js.FS(), "*")
	if err != nil || strings.Join(names, " ") != "muster.d.ts muster.js" {
		t.Errorf("FS holds %v (%v), want muster.d.ts and muster.js", names, err)
	}
}
