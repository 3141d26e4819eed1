package federation

import (
	"context"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"
)

// requireAdmin lets through requests bearing the admin token: 401 for no
// or an unknown token, 403 for a federation key or when the admin API is
// off.
func (h *Home) requireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.adminHash == "" {
			h.fail(w, fmt.Errorf("admin API is off (no admin token configured): %w", ErrForbidden))
			return
		}
		token := bearer(r)
		if token != "" && hashesEqual(keyHash(token), h.adminHash) {
			next.ServeHTTP(w, r)
			return
		}
		if _, ok := keyKindOf(token); ok {
			ctx, cancel := h.ctx(r)
			p, err := h.authenticate(ctx, token)
			cancel()
			if err == nil {
				h.fail(w, fmt.Errorf("%s key at the admin API: %w", p.kind, ErrForbidden))
				return
			}
		}
		h.fail(w, fmt.Errorf("admin token: %w", ErrUnauthorized))
	})
}

// createNodeResponse is the answer to POST /nodes.
type createNodeResponse struct {
	Node NodeInfo `json:"node"`
	// Key is the node key, shown this once.
	Key string `json:"key"`
}

func (h *Home) serveCreateNode(w http.ResponseWriter, r *http.Request) {
	data, err := h.readBody(w, r)
	if err != nil {
		h.fail(w, err)
		return
	}
	spec, err := decodeNodeSpec(data)
	if err != nil {
		h.fail(w, err)
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	info, key, err := h.CreateNode(ctx, spec)
	if err != nil {
		h.fail(w, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, createNodeResponse{Node: info, Key: key})
}

// nodeList is the answer to GET /nodes.
func (h *Home) nodeList(ctx context.Context, _ string) (map[string][]NodeInfo, error) {
	nodes, err := h.Nodes(ctx)
	return map[string][]NodeInfo{"nodes": nodes}, err
}

// adminGet answers a GET of the admin API with what fn returns for the
// path's {id} ("" where the path has none).
func adminGet[T any](h *Home, fn func(context.Context, string) (T, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := h.ctx(r)
		defer cancel()
		v, err := fn(ctx, chi.URLParam(r, "id"))
		if err != nil {
			h.fail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// adminAction answers a POST of the admin API that fn carries out on the
// path's {id}, with 204 No Content.
func (h *Home) adminAction(fn func(context.Context, string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := h.ctx(r)
		defer cancel()
		if err := fn(ctx, chi.URLParam(r, "id")); err != nil {
			h.fail(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}
