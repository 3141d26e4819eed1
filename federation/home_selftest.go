package federation

import (
	"context"
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
