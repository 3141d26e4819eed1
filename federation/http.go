package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
)

// Paths of the doors.
const (
	PathJoin     = "/api/v1/federation/join"
	PathAnnounce = "/api/v1/federation/announce"
	PathSelfTest = "/api/v1/federation/selftest"
	PathRooms    = "/api/v1/federation/rooms"
	PathRegions  = "/api/v1/regions"
	PathAdmin    = "/api/v1/admin/federation"
)

// Handler returns home's HTTP API:
//
//	POST /api/v1/federation/join      node key: enrol a server, get its key once
//	POST /api/v1/federation/announce  server key: services and hardware report
//	POST /api/v1/federation/selftest  server key: the bandwidth self-test upload
//	POST /api/v1/federation/rooms     server key: a room's full snapshot
//	GET  /api/v1/regions              public: the nodes in rotation
//
// and, with the admin token, under /api/v1/admin/federation:
//
//	GET  /nodes                 list nodes and their servers
//	POST /nodes                 create a node (NodeSpec); its key is in the answer, once
//	GET  /nodes/{id}            one node
//	POST /nodes/{id}/approve    approve
//	POST /nodes/{id}/revoke     revoke a node and all its servers
//	POST /servers/{id}/revoke   revoke one server
//	GET  /rooms/{id}            a room's latest snapshot
//
// Keys travel as "Authorization: Bearer <key>". Errors are JSON
// {"error": "...", "code": "..."}: 400 invalid, 401 unknown or revoked key,
// 403 wrong kind of key, another node named, or a room report from a node
// not approved, 404, 409 (a room of another server, too many servers or
// rooms, a room report before the server's announce), 413, 429, 503.
// Mount it at the root of home's router. The client address used for
// per-address limits is r.RemoteAddr: behind a proxy, put a trusted
// real-IP middleware in front.
func (h *Home) Handler() http.Handler { return h.handler }

func (h *Home) routes() http.Handler {
	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such path")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed here")
	})
	r.Get(PathRegions, h.serveRegions)
	r.Group(func(r chi.Router) {
		r.Use(h.limitAddress)
		r.Post(PathJoin, h.door(kindNode, "join", h.cfg.Limits.Join, h.serveJoin))
		r.Post(PathAnnounce, h.door(kindServer, "announce", h.cfg.Limits.Announce, h.serveAnnounce))
		r.Post(PathSelfTest, h.door(kindServer, "selftest", h.cfg.Limits.SelfTest, h.serveSelfTest))
		r.Post(PathRooms, h.door(kindServer, "rooms", h.cfg.Limits.Rooms, h.serveRoom))
	})
	r.Route(PathAdmin, func(r chi.Router) {
		r.Use(h.requireAdmin)
		r.Get("/nodes", h.serveListNodes)
		r.Post("/nodes", h.serveCreateNode)
		r.Get("/nodes/{id}", h.serveNode)
		r.Post("/nodes/{id}/approve", h.serveApprove)
		r.Post("/nodes/{id}/revoke", h.serveRevokeNode)
		r.Post("/servers/{id}/revoke", h.serveRevokeServer)
		r.Get("/rooms/{id}", h.serveRoomSnapshot)
	})
	return r
}

// ctx bounds a request's register calls.
func (h *Home) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), h.cfg.RequestTimeout)
}

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

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

// readBody reads a JSON body of at most MaxBody bytes.
func (h *Home) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return h.readBodyLimit(w, r, h.cfg.MaxBody, "max-body")
}

// readBodyLimit reads a body of at most limit bytes; key names the config
// key of the limit.
func (h *Home) readBodyLimit(w http.ResponseWriter, r *http.Request, limit int64, key string) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, fmt.Errorf("%w: limit is %d bytes (%s)", ErrTooLarge, mbe.Limit, key)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: reading body: %v", ErrInvalid, err)
	}
	return data, nil
}

func (h *Home) serveJoin(w http.ResponseWriter, r *http.Request, p principal) {
	data, err := h.readBody(w, r)
	if err != nil {
		h.fail(w, err)
		return
	}
	req, err := decodeJoin(data)
	if err != nil {
		h.fail(w, err)
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	res, err := h.join(ctx, p, req)
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, res)
}

func (h *Home) serveAnnounce(w http.ResponseWriter, r *http.Request, p principal) {
	data, err := h.readBody(w, r)
	if err != nil {
		h.fail(w, err)
		return
	}
	req, err := decodeAnnounce(data)
	if err != nil {
		h.fail(w, err)
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	res, err := h.announce(ctx, p, req)
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// serveSelfTest measures the upload itself: the server cannot claim a rate
// it did not reach.
func (h *Home) serveSelfTest(w http.ResponseWriter, r *http.Request, p principal) {
	body := http.MaxBytesReader(w, r.Body, h.cfg.SelfTestBytes)
	var first [1]byte
	start := time.Now()
	n, err := io.ReadFull(body, first[:])
	if err == nil {
		start = time.Now() // from the first byte, not from the headers
		var m int64
		m, err = io.Copy(io.Discard, body)
		n += int(m)
	}
	elapsed := time.Since(start)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		h.fail(w, fmt.Errorf("%w: the self-test is %d bytes", ErrTooLarge, h.cfg.SelfTestBytes))
		return
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		h.fail(w, fmt.Errorf("%w: empty self-test upload", ErrInvalid))
		return
	case err != nil:
		h.fail(w, fmt.Errorf("%w: self-test upload: %v", ErrInvalid, err))
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	res, err := h.recordSelfTest(ctx, p, int64(n), elapsed)
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (h *Home) serveRoom(w http.ResponseWriter, r *http.Request, p principal) {
	data, err := h.readBodyLimit(w, r, h.cfg.MaxReportBytes, "max-report-bytes")
	if err != nil {
		h.fail(w, err)
		return
	}
	req, err := decodeRoomReport(data)
	if err != nil {
		h.fail(w, err)
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	stored, err := h.reportRoom(ctx, p, req)
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, roomResponse{Stored: stored})
}

func (h *Home) serveRegions(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	list, err := h.regions(ctx)
	if err != nil {
		h.fail(w, err)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=5")
	writeJSON(w, http.StatusOK, list)
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

func (h *Home) serveListNodes(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	nodes, err := h.Nodes(ctx)
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string][]NodeInfo{"nodes": nodes})
}

func (h *Home) serveNode(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	n, err := h.Node(ctx, chi.URLParam(r, "id"))
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, n)
}

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

func (h *Home) serveApprove(w http.ResponseWriter, r *http.Request) {
	h.adminAction(h.Approve)(w, r)
}

func (h *Home) serveRevokeNode(w http.ResponseWriter, r *http.Request) {
	h.adminAction(h.RevokeNode)(w, r)
}

func (h *Home) serveRevokeServer(w http.ResponseWriter, r *http.Request) {
	h.adminAction(h.RevokeServer)(w, r)
}

func (h *Home) serveRoomSnapshot(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	room, err := h.Room(ctx, chi.URLParam(r, "id"))
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, room)
}

// fail answers err as a JSON error. Server-side failures are logged here
// and answered without their detail.
func (h *Home) fail(w http.ResponseWriter, err error) {
	status, code := statusOf(err)
	msg := err.Error()
	switch status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="muster-federation"`)
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", strconv.Itoa(int(max(1, h.cfg.Limits.Window.Seconds()))))
	}
	if status >= 500 {
		h.log.Warn("federation: request failed", "err", err)
		msg = "the register is unavailable; try again"
		if status != http.StatusServiceUnavailable {
			msg = "internal error"
		}
	}
	writeError(w, status, code, msg)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error: msg, Code: code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
