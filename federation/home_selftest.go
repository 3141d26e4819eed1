package federation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/muster-gg/muster/backplane"
)

// selfTest returns p's self-test record, creating one due now if missing.
func (h *Home) selfTest(ctx context.Context, p principal, now time.Time) (selfTestRecord, error) {
	var st selfTestRecord
	err := h.update(ctx, func() ([]backplane.RecordSwap, error) {
		st = selfTestRecord{}
		raw, err := h.read(ctx, collSelfTests, p.server.ID, &st)
		if err != nil || raw != nil {
			return nil, err
		}
		st = selfTestRecord{NodeID: p.node.ID, Due: now}
		return []backplane.RecordSwap{set(collSelfTests, p.server.ID, nil, st)}, nil
	})
	return st, err
}

// recordSelfTest records an upload of n bytes that took elapsed.
func (h *Home) recordSelfTest(ctx context.Context, p principal, n int64, elapsed time.Duration) (selfTestResponse, error) {
	now := h.now()
	elapsed = max(elapsed, time.Microsecond)
	res := SelfTestResult{At: now, Bytes: n, BytesPerSecond: float64(n) / elapsed.Seconds()}
	res.Passed = n == h.cfg.SelfTestBytes && res.BytesPerSecond >= h.cfg.MinBandwidth
	var st selfTestRecord
	err := h.update(ctx, func() ([]backplane.RecordSwap, error) {
		_, _, _, rawS, err := h.current(ctx, p)
		if err != nil {
			return nil, err
		}
		st = selfTestRecord{NodeID: p.node.ID, Due: now}
		raw, err := h.read(ctx, collSelfTests, p.server.ID, &st)
		if err != nil {
			return nil, err
		}
		st.Last = &res
		if res.Passed {
			st.Due = now.Add(h.cfg.SelfTestEvery)
		}
		return []backplane.RecordSwap{same(collServers, p.server.ID, rawS), set(collSelfTests, p.server.ID, raw, st)}, nil
	})
	if err != nil {
		return selfTestResponse{}, err
	}
	h.log.Info("federation: self-test", "node_id", p.node.ID, "server_id", p.server.ID,
		"bytes", n, "bytes_per_second", int64(res.BytesPerSecond), "passed", res.Passed)
	return selfTestResponse{SelfTestResult: res, NextDueInSeconds: st.Due.Sub(now).Seconds()}, nil
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
