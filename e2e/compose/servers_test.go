package compose

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

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
	// Started is when the engine started it.
	Started time.Time
}

// servers returns the running game containers of p, by name.
func servers(ctx context.Context, p *dockertest.Project, client *http.Client) ([]server, error) {
	ids, err := p.Containers(ctx, "game")
	if err != nil {
		return nil, err
	}
	var out []server
	for _, id := range ids {
		info, err := p.Run(ctx, nil, "docker", "inspect", "--format",
			"{{.Name}} {{.State.Running}} {{.State.StartedAt}} {{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", id)
		if err != nil {
			return nil, fmt.Errorf("%w: %s", err, info)
		}
		f := strings.Fields(info)
		if len(f) != 4 || f[1] != "true" {
			continue
		}
		started, err := time.Parse(time.RFC3339Nano, f[2])
		if err != nil {
			return nil, err
		}
		s := server{Container: id, Name: strings.TrimPrefix(f[0], "/"), Addr: f[3] + ":8080", Started: started}
		var cp fleet.Capacity
		if _, err := getJSON(ctx, client, s, fleet.PathCapacity, &cp); err != nil {
			return nil, err
		}
		s.Node = cp.NodeID
		out = append(out, s)
	}
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

// sees reports whether every server of ss sees exactly the nodes of ss,
// all ready, and returns what each sees.
func sees(ctx context.Context, client *http.Client, ss []server) (bool, []string) {
	var want []string
	for _, s := range ss {
		want = append(want, s.Node)
	}
	slices.Sort(want)
	ok := true
	var seen []string
	for _, s := range ss {
		nodes, err := view(ctx, client, s)
		var ids []string
		for _, n := range nodes {
			ids = append(ids, n.ID)
			if n.State != fleet.StateReady {
				ok = false
			}
		}
		if err != nil || !slices.Equal(ids, want) {
			ok = false
		}
		seen = append(seen, fmt.Sprintf("%s (%s) sees %v %v", s.Name, s.Node, ids, err))
	}
	return ok, seen
}
