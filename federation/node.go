package federation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Node is the agent that runs beside each server of a regional node: it
// enrols the server at home once, announces it every minute, runs the
// bandwidth self-test when home says it is due, and sends home the whole
// state of a room whenever it changes (ReportRoom).
//
// NewNode starts nothing; Run does the work and returns when its context
// ends. A Node is safe for concurrent use: ReportRoom may be called from
// any goroutine, before, during or after Run.
type Node struct {
	cfg  NodeConfig
	log  *slog.Logger
	base *url.URL // home, checked by homeBaseURL

	running atomic.Bool
	seq     atomic.Uint64 // last sequence number handed out
	epoch   uint64        // first sequence number of this Node

	mu      sync.Mutex
	cred    *serverCredential
	pending map[string]pendingReport // undelivered snapshots by room id
	failing bool                     // announces are failing (logged once)
	onBack  []func()                 // called when announces get through again
}

// NewNode returns an agent for cfg. It starts nothing and touches no file.
func NewNode(cfg NodeConfig, logger *slog.Logger) (*Node, error) {
	cfg, base, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	n := &Node{
		cfg:     cfg,
		log:     componentLogger(logger),
		base:    base,
		pending: make(map[string]pendingReport),
	}
	// Sequence numbers start from the wall clock, so that a restarted agent
	// numbers its reports above everything its previous run sent.
	n.seq.Store(uint64(time.Now().UnixNano()))
	n.epoch = n.seq.Load() + 1
	return n, nil
}

// ServerID returns this server's id at home, or "" before Run has joined
// or loaded the key file.
func (n *Node) ServerID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cred == nil {
		return ""
	}
	return n.cred.ServerID
}

// Run enrols the server unless KeyFile already holds its key, then
// announces at once and every AnnounceEvery until ctx ends, running the
// self-test when it is due and resending room reports home has not
// acknowledged. Home being unreachable is retried, never fatal. Run returns
// nil when ctx ends, and an error when home refuses the server for good
// (revoked: errors.Is(err, ErrRevoked); unknown key: ErrUnauthorized) or
// the key file cannot be written. Run may be called again after it returns,
// not concurrently (ErrRunning).
func (n *Node) Run(ctx context.Context) error {
	if !n.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer n.running.Store(false)
	if err := n.ensureJoined(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	t := time.NewTimer(0)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		announced, err := n.step(ctx)
		if err != nil {
			return err
		}
		// After a failed announce the agent retries sooner, backing off
		// with jitter, so that the nodes cut off by one home outage do not
		// all come back at the same moment.
		wait := n.cfg.AnnounceEvery
		if announced {
			failures = 0
		} else {
			wait = backoff(failures, n.cfg.AnnounceEvery)
			failures++
		}
		t.Reset(wait)
	}
}

// backoff is the wait before retry n (from 0) after failures: 1s doubling
// up to limit, drawn at random from the upper half of that.
func backoff(n int, limit time.Duration) time.Duration {
	d := time.Second << min(n, 20)
	if d > limit {
		d = limit
	}
	return d/2 + rand.N(d/2+1)
}

// fatal reports an answer from home that retrying cannot change.
func fatal(err error) bool {
	return errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrRevoked) || errors.Is(err, ErrForbidden)
}

// step announces, runs a due self-test and resends pending room reports.
// It reports whether the announce got through, and returns an error only
// when home refuses the server for good.
func (n *Node) step(ctx context.Context) (bool, error) {
	ann, err := n.announce(ctx)
	if err != nil {
		if fatal(err) {
			return false, fmt.Errorf("announce: %w", err)
		}
		if ctx.Err() == nil {
			n.setFailing(true, err)
		}
		return false, nil
	}
	n.setFailing(false, nil)
	if n.cfg.OnAnnounce != nil {
		n.cfg.OnAnnounce(ann)
	}
	if ann.SelfTest.DueInSeconds <= 0 && ann.SelfTest.Bytes > 0 {
		res, err := n.selfTest(ctx, ann.SelfTest.Bytes)
		switch {
		case fatal(err):
			return true, fmt.Errorf("self-test: %w", err)
		case err != nil:
			n.log.Warn("federation: self-test failed", "err", err)
		default:
			n.log.Info("federation: self-test done", "bytes_per_second", int64(res.BytesPerSecond), "passed", res.Passed)
		}
	}
	return true, n.flush(ctx)
}

func (n *Node) setFailing(failing bool, err error) {
	n.mu.Lock()
	was := n.failing
	n.failing = failing
	hooks := n.onBack
	n.mu.Unlock()
	switch {
	case failing && !was:
		n.log.Warn("federation: cannot announce to home; retrying with backoff", "err", err)
	case !failing && was:
		n.log.Info("federation: announcing to home again")
		// Home may have ended this server's rooms while it was cut off.
		for _, f := range hooks {
			f()
		}
	}
}

// whenBack adds f to the functions called, on Run's goroutine, when
// announces get through again after failing. f must not block.
func (n *Node) whenBack(f func()) {
	n.mu.Lock()
	n.onBack = append(n.onBack, f)
	n.mu.Unlock()
}

func (n *Node) credential() *serverCredential {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cred
}

func (n *Node) announce(ctx context.Context) (Announcement, error) {
	cred := n.credential()
	req := announceRequest{NodeID: cred.NodeID, Services: n.cfg.Services, Hardware: n.cfg.Hardware(), Epoch: n.epoch}
	var ann Announcement
	err := n.postJSON(ctx, PathAnnounce, cred.ServerKey, req, &ann)
	return ann, err
}

// selfTest uploads size pseudo-random (incompressible) bytes; home times
// the upload and records the rate.
func (n *Node) selfTest(ctx context.Context, size int64) (selfTestResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.SelfTestTimeout)
	defer cancel()
	var seed [32]byte
	src := rand.NewChaCha8(seed)
	var res selfTestResponse
	err := n.call(ctx, PathSelfTest, n.credential().ServerKey, "application/octet-stream", io.LimitReader(src, size), size, &res)
	return res, err
}
