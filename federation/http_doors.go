package federation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

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

func (h *Home) serveJoin(w http.ResponseWriter, r *http.Request, p principal) {
	serveDoor(h, w, r, p, h.cfg.MaxBody, "max-body", decodeJoin, h.join, http.StatusCreated)
}

func (h *Home) serveAnnounce(w http.ResponseWriter, r *http.Request, p principal) {
	serveDoor(h, w, r, p, h.cfg.MaxBody, "max-body", decodeAnnounce, h.announce, http.StatusOK)
}

func (h *Home) serveRoom(w http.ResponseWriter, r *http.Request, p principal) {
	serveDoor(h, w, r, p, h.cfg.MaxReportBytes, "max-report-bytes", decodeRoomReport, h.reportRoom, http.StatusOK)
}

// serveDoor answers a door's JSON request: it reads a body of at most
// limit bytes (key names the limit's config key), decodes it, and answers
// status with what do returns.
func serveDoor[Req, Res any](h *Home, w http.ResponseWriter, r *http.Request, p principal,
	limit int64, key string, decode func([]byte) (Req, error),
	do func(context.Context, principal, Req) (Res, error), status int) {
	data, err := h.readBodyLimit(w, r, limit, key)
	if err != nil {
		h.fail(w, err)
		return
	}
	req, err := decode(data)
	if err != nil {
		h.fail(w, err)
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	res, err := do(ctx, p, req)
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, status, res)
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

// serveRegions serves the public regions list, cached for RegionsCache.
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
