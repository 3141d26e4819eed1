package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/fleet"
)

// serverNodes reads the live servers through one server: its dashboard
// feed, which lists the fleet as that server sees it, or, on a server
// without the dashboard, its capacity probe, which describes only itself.
// Its own row shows what its readiness probe answers when that is 503
// (detached, foreign-key), and the servers it drops for their key are
// listed as foreign-key.
func serverNodes(ctx context.Context, o *options) ([]fleet.Node, error) {
	base, err := serverURL(o.server)
	if err != nil {
		return nil, err
	}
	var snap dashboard.Snapshot
	err = getJSON(ctx, o, base+dashboard.PathNodes, &snap)
	var status statusError
	if errors.As(err, &status) && status.code == http.StatusNotFound {
		c, err := capacity(ctx, o, base)
		if err != nil {
			return nil, err
		}
		list := []fleet.Node{{ID: c.NodeID, State: c.State, Load: c.Load, MaxLoad: c.MaxLoad, Stats: c.Stats}}
		showProbe(ctx, o, base, c.NodeID, list)
		return withForeign(list, c.NodeID, c.Foreign), nil
	}
	if err != nil {
		return nil, err
	}
	list := make([]fleet.Node, len(snap.Nodes))
	for i, n := range snap.Nodes {
		list[i] = fleet.Node{
			ID: n.ID, Cluster: n.Cluster, Region: n.Region, PublicAddress: n.PublicAddress,
			State: n.State, Load: n.Load, LoadStep: n.LoadStep, MaxLoad: n.MaxLoad, Stats: n.Stats,
		}
	}
	showProbe(ctx, o, base, snap.Self, list)
	return withForeign(list, snap.Self, snap.Foreign), nil
}

// capacity reads a server's load report.
func capacity(ctx context.Context, o *options, base string) (fleet.Capacity, error) {
	var c fleet.Capacity
	err := getJSON(ctx, o, base+fleet.PathCapacity, &c)
	return c, err
}

// serverURL checks a --server value and returns it without a trailing
// slash.
func serverURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%w: --server %q: want http://host:port", errUsage, s)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// statusError is an HTTP answer other than the one expected.
type statusError struct {
	url  string
	code int
	body string
}

func (e statusError) Error() string {
	msg := fmt.Sprintf("%s: %d %s", e.url, e.code, http.StatusText(e.code))
	if e.body != "" {
		msg += ": " + e.body
	}
	return msg
}

// do sends req with the call timeout and returns the response body, or a
// statusError when the status is not want.
func do(ctx context.Context, o *options, req *http.Request, want int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	res, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", req.URL, err)
	}
	if res.StatusCode != want {
		msg := oneLine(strings.TrimSpace(string(body)))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return nil, statusError{url: req.URL.String(), code: res.StatusCode, body: msg}
	}
	return body, nil
}

func getJSON(ctx context.Context, o *options, u string, v any) error {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	body, err := do(ctx, o, req, http.StatusOK)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: not the expected JSON: %w", u, err)
	}
	return nil
}
