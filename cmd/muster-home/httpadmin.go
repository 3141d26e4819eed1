package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/muster-gg/muster/federation"
)

// httpAdmin administers a running home through its admin API.
type httpAdmin struct {
	base, token string
	client      *http.Client
}

func (a *httpAdmin) do(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+federation.PathAdmin+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var eb struct{ Error, Code string }
		_ = json.Unmarshal(data, &eb)
		return &federation.HomeError{Status: resp.StatusCode, Code: eb.Code, Message: eb.Error}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("decode answer: %w", err)
		}
	}
	return nil
}

func (a *httpAdmin) CreateNode(ctx context.Context, spec federation.NodeSpec) (federation.NodeInfo, string, error) {
	var res struct {
		Node federation.NodeInfo `json:"node"`
		Key  string              `json:"key"`
	}
	err := a.do(ctx, http.MethodPost, "/nodes", spec, &res)
	return res.Node, res.Key, err
}

func (a *httpAdmin) Approve(ctx context.Context, id string) error {
	return a.do(ctx, http.MethodPost, "/nodes/"+url.PathEscape(id)+"/approve", nil, nil)
}

func (a *httpAdmin) RevokeNode(ctx context.Context, id string) error {
	return a.do(ctx, http.MethodPost, "/nodes/"+url.PathEscape(id)+"/revoke", nil, nil)
}

func (a *httpAdmin) RevokeServer(ctx context.Context, id string) error {
	return a.do(ctx, http.MethodPost, "/servers/"+url.PathEscape(id)+"/revoke", nil, nil)
}

func (a *httpAdmin) Nodes(ctx context.Context) ([]federation.NodeInfo, error) {
	var res struct {
		Nodes []federation.NodeInfo `json:"nodes"`
	}
	err := a.do(ctx, http.MethodGet, "/nodes", nil, &res)
	return res.Nodes, err
}
