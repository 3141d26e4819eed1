package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

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
		r.Get("/nodes", adminGet(h, h.nodeList))
		r.Post("/nodes", h.serveCreateNode)
		r.Get("/nodes/{id}", adminGet(h, h.Node))
		r.Post("/nodes/{id}/approve", h.adminAction(h.Approve))
		r.Post("/nodes/{id}/revoke", h.adminAction(h.RevokeNode))
		r.Post("/servers/{id}/revoke", h.adminAction(h.RevokeServer))
		r.Get("/rooms/{id}", adminGet(h, h.Room))
	})
	return r
}

// ctx bounds a request's register calls.
func (h *Home) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), h.cfg.RequestTimeout)
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
