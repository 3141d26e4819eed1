package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/fleet"
)

// stateCells returns "id=state" for each row of a nodes table.
func stateCells(out string) string {
	var cells []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		if f := fields(line); len(f) >= 3 {
			cells = append(cells, f[0]+"="+f[2])
		}
	}
	return strings.Join(cells, " ")
}

// Three servers on one Redis, one of them with another security key:
// `muster nodes` lists it as foreign-key, through the registry and
// through a server, and says why on stderr (#39.7).
func TestNodesShowsForeignKey(t *testing.T) {
	t.Parallel()
	url := miniredis.RunT(t).Addr()
	key := []byte("the fleet's security key")
	s0 := startKeyed(t, url, "split", "s0", true, key)
	startKeyed(t, url, "split", "s1", false, key)
	startKeyed(t, url, "split", "s2", false, []byte("some other key, 16+"))

	r := []string{"--redis", url, "--cluster", "split"}
	poll(t, func() (bool, string) {
		code, out, errOut := cli(t, append([]string{"nodes"}, r...)...)
		if got := stateCells(out); code != 0 || got != "s0=ready s1=ready s2=foreign-key" ||
			!strings.Contains(errOut, "s0 drops the records of s2") || !strings.Contains(errOut, "MUSTER__SECURITY__KEY") {
			return false, fmt.Sprintf("nodes --redis: exit %d, states %q\n%s%s", code, got, out, errOut)
		}
		return true, ""
	})
	poll(t, func() (bool, string) {
		code, out, errOut := cli(t, "nodes", "--server", s0.URL)
		if got := stateCells(out); code != 0 || got != "s0=ready s1=ready s2=foreign-key" {
			return false, fmt.Sprintf("nodes --server s0: exit %d, states %q\n%s%s", code, got, out, errOut)
		}
		return true, ""
	})
}

// `muster nodes --server` shows what the server's readiness probe says
// when its record says ready: detached, foreign-key (#39.7).
func TestNodesThroughServerShowsProbe(t *testing.T) {
	t.Parallel()
	for _, probe := range []string{"detached", "foreign-key: 2 of the 3 servers of cluster default (a, b) sign with another muster.security.key"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case dashboard.PathNodes:
				json.NewEncoder(w).Encode(dashboard.Snapshot{Self: "s0", Nodes: []dashboard.Node{
					{ID: "s0", State: fleet.StateReady, MaxLoad: 10},
					{ID: "s1", State: fleet.StateReady, MaxLoad: 10},
				}})
			case fleet.PathReady:
				http.Error(w, probe, http.StatusServiceUnavailable)
			default:
				http.NotFound(w, r)
			}
		}))
		defer srv.Close()
		code, out, errOut := cli(t, "nodes", "--server", srv.URL)
		want, _, _ := strings.Cut(probe, ":")
		if got := stateCells(out); code != 0 || got != "s0="+want+" s1=ready" {
			t.Errorf("nodes --server whose probe answers 503 %q: exit %d, states %q, want s0=%s\n%s%s", probe, code, got, want, out, errOut)
		}
	}
}
