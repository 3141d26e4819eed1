package compose

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/dockertest"
)

// server is one game container, reached from this machine at its address
// on the project's network (as the README tells operators to).
type server struct {
	// Container is the container's id, Name its name.
	Container, Name string
	// Addr is its address on the project's network, ip:8080.
	Addr string
	// Node is its node id in the fleet.
	Node string
}

// servers returns the running game containers of p that answer, by name. Their
// addresses come from the project's network, not from each container
// (docker inspect of a container the engine is still cleaning up after a
// SIGKILL blocked for minutes on this engine).
func servers(ctx context.Context, p *dockertest.Project, client *http.Client) ([]server, error) {
	ids, err := p.Running(ctx, "game")
	if err != nil {
		return nil, err
	}
	addrs, err := p.Addresses(ctx)
	if err != nil {
		return nil, err
	}
	var out []server
	for _, id := range ids {
		a, ok := addrs[id]
		if !ok {
			continue // not on the network (yet, or any more)
		}
		s := server{Container: id, Name: a[0], Addr: a[1] + ":8080"}
		var cp fleet.Capacity
		if code, err := getJSON(ctx, client, s, fleet.PathCapacity, &cp); err != nil || code != http.StatusOK {
			continue // not serving yet
		}
		s.Node = cp.NodeID
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b server) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// getJSON fetches path from s and decodes its JSON body into v when the
// answer is 200; it returns the status code.
func getJSON(ctx context.Context, client *http.Client, s server, path string, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Addr+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || v == nil {
		return resp.StatusCode, err
	}
	return resp.StatusCode, json.Unmarshal(body, v)
}

// view returns s's view of the fleet, from its dashboard feed.
func view(ctx context.Context, client *http.Client, s server) ([]dashboard.Node, error) {
	var snap dashboard.Snapshot
	code, err := getJSON(ctx, client, s, dashboard.PathNodes, &snap)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("%s %s: %d", s.Name, dashboard.PathNodes, code)
	}
	return snap.Nodes, err
}

// sees reports whether every server of ss lists exactly the nodes of ss
// (listed), and all of them ready (ready), and returns what each sees.
func sees(ctx context.Context, client *http.Client, ss []server) (listed, ready bool, seen []string) {
	var want []string
	for _, s := range ss {
		want = append(want, s.Node)
	}
	slices.Sort(want)
	listed, ready = true, true
	for _, s := range ss {
		nodes, err := view(ctx, client, s)
		var ids []string
		for _, n := range nodes {
			ids = append(ids, n.ID)
			if n.State != fleet.StateReady {
				ready = false
			}
		}
		if err != nil || !slices.Equal(ids, want) {
			listed, ready = false, false
		}
		seen = append(seen, fmt.Sprintf("%s (%s) sees %v %v", s.Name, s.Node, ids, err))
	}
	return listed, ready, seen
}
