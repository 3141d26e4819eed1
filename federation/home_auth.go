package federation

import (
	"context"
	"fmt"
	"net"
	"net/http"
)

// principal is who a request's key belongs to.
type principal struct {
	kind   keyKind
	node   nodeRecord
	server serverRecord // for kindServer
}

// authenticate finds the owner of key: ErrUnauthorized for a malformed or
// unknown key, ErrRevoked for a revoked node or server.
func (h *Home) authenticate(ctx context.Context, key string) (principal, error) {
	kind, ok := keyKindOf(key)
	if !ok {
		return principal{}, ErrUnauthorized
	}
	hash := keyHash(key)
	var kr keyRecord
	raw, err := h.read(ctx, collKeys, hash, &kr)
	if err != nil {
		return principal{}, err
	}
	// The lookup is by hash, so its timing tells nothing about the key;
	// the comparison is constant-time all the same.
	if raw == nil || !hashesEqual(kr.Hash, hash) || kr.Kind != kind {
		return principal{}, ErrUnauthorized
	}
	p := principal{kind: kind}
	if p.node, err = h.node(ctx, kr.NodeID); err != nil {
		if errorsIsNotFound(err) {
			return principal{}, ErrUnauthorized
		}
		return principal{}, err
	}
	if p.node.Revoked {
		return principal{}, fmt.Errorf("node %q: %w", p.node.ID, ErrRevoked)
	}
	if kind == kindServer {
		raw, err := h.read(ctx, collServers, kr.ServerID, &p.server)
		if err != nil {
			return principal{}, err
		}
		if raw == nil || p.server.NodeID != p.node.ID || !hashesEqual(p.server.KeyHash, hash) {
			return principal{}, ErrUnauthorized
		}
		if p.server.Revoked {
			return principal{}, fmt.Errorf("server %q: %w", p.server.ID, ErrRevoked)
		}
	}
	return p, nil
}

// current re-reads p's node and server records for a compare-and-set: the
// raw bytes to check, and ErrRevoked when either was revoked since.
func (h *Home) current(ctx context.Context, p principal) (n nodeRecord, rawN []byte, sv serverRecord, rawS []byte, err error) {
	if n, rawN, err = h.nodeRaw(ctx, p.node.ID); err != nil {
		return
	}
	if n.Revoked {
		err = fmt.Errorf("node %q: %w", n.ID, ErrRevoked)
		return
	}
	if p.kind != kindServer {
		return
	}
	if rawS, err = h.read(ctx, collServers, p.server.ID, &sv); err != nil {
		return
	}
	if rawS == nil {
		err = ErrUnauthorized
	} else if sv.Revoked {
		err = fmt.Errorf("server %q: %w", sv.ID, ErrRevoked)
	}
	return
}

// clientAddr is the address a request came from, for per-address limits.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// limitAddress counts a request to the federation doors against its
// client address's rate limit (Limits.PerIP) before any key is checked.
func (h *Home) limitAddress(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := h.ctx(r)
		ok := h.limiter.allow(ctx, "ip."+clientAddr(r), h.cfg.Limits.PerIP, h.cfg.Limits.Window)
		cancel()
		if !ok {
			h.fail(w, fmt.Errorf("address %s: %w", clientAddr(r), ErrRateLimited))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// door authenticates a federation request with a key of the given kind and
// counts it against the key's rate limit.
func (h *Home) door(kind keyKind, name string, limit int, fn func(http.ResponseWriter, *http.Request, principal)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := h.ctx(r)
		defer cancel()
		p, err := h.authenticate(ctx, bearer(r))
		if err != nil {
			h.fail(w, err)
			return
		}
		if p.kind != kind {
			h.fail(w, fmt.Errorf("%s key at %s: %w", p.kind, name, ErrForbidden))
			return
		}
		id := p.node.ID
		if kind == kindServer {
			id = p.server.ID
		}
		if !h.limiter.allow(ctx, name+"."+id, limit, h.cfg.Limits.Window) {
			h.fail(w, fmt.Errorf("%s by %s: %w", name, id, ErrRateLimited))
			return
		}
		fn(w, r, p)
	}
}

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
