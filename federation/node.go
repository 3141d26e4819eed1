package federation

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
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
	base *url.URL // home, checked by checkBaseURL

	running atomic.Bool
	seq     atomic.Uint64 // last sequence number handed out
	epoch   uint64        // first sequence number of this Node

	mu      sync.Mutex
	cred    *serverCredential
	pending map[string]pendingReport // undelivered snapshots by room id
	failing bool                     // announces are failing (logged once)
	onBack  []func()                 // called when announces get through again
}

// serverCredential is what the key file holds.
type serverCredential struct {
	NodeID    string `json:"node_id"`
	ServerID  string `json:"server_id"`
	ServerKey string `json:"server_key"`
}

type pendingReport struct {
	report RoomReport
	seq    uint64
}

// NewNode returns an agent for cfg. It starts nothing and touches no file.
func NewNode(cfg NodeConfig, logger *slog.Logger) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	base, err := url.Parse(cfg.HomeURL)
	if err != nil {
		return nil, err // checked by withDefaults
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

// ensureJoined loads the server key from KeyFile, or joins and saves it.
func (n *Node) ensureJoined(ctx context.Context) error {
	cred, err := n.loadKey()
	if err != nil {
		return err
	}
	if cred == nil {
		if n.cfg.NodeKey == "" {
			return fmt.Errorf("%w: NodeKey is required: %s holds no server key", ErrInvalidConfig, n.cfg.KeyFile)
		}
		if cred, err = n.joinWithRetry(ctx); err != nil {
			return err
		}
		if err := n.saveKey(cred); err != nil {
			return err
		}
		n.log.Info("federation: joined home", "node_id", cred.NodeID, "server_id", cred.ServerID)
	}
	n.mu.Lock()
	n.cred = cred
	n.mu.Unlock()
	return nil
}

func (n *Node) joinWithRetry(ctx context.Context) (*serverCredential, error) {
	attempt := 0
	for logged := false; ; {
		cred, err := n.join(ctx)
		if err == nil {
			return cred, nil
		}
		if fatal(err) || errors.Is(err, ErrInvalid) || errors.Is(err, ErrTooManyServers) {
			return nil, fmt.Errorf("join: %w", err)
		}
		if !logged {
			n.log.Warn("federation: cannot join home yet; retrying", "err", err)
			logged = true
		}
		t := time.NewTimer(backoff(attempt, n.cfg.AnnounceEvery))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		attempt++
	}
}

func (n *Node) join(ctx context.Context) (*serverCredential, error) {
	hw := n.cfg.Hardware()
	req := joinRequest{Name: n.cfg.Name, Hardware: hw}
	if req.Name == "" {
		req.Name = clip(hw.Hostname, maxLabel)
	}
	var res joinResponse
	if err := n.postJSON(ctx, PathJoin, n.cfg.NodeKey, req, &res); err != nil {
		return nil, err
	}
	// The key file keeps the ids and every later request carries them.
	if !validKeyFormat(res.ServerKey, kindServer) || !validID(res.ServerID) || !validID(res.NodeID) {
		return nil, fmt.Errorf("join: home answered without a valid server key")
	}
	return &serverCredential{NodeID: res.NodeID, ServerID: res.ServerID, ServerKey: res.ServerKey}, nil
}

// loadKey reads KeyFile: nil when it does not exist.
func (n *Node) loadKey() (*serverCredential, error) {
	data, err := os.ReadFile(n.cfg.KeyFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	var cred serverCredential
	if err := json.Unmarshal(data, &cred); err != nil || !validKeyFormat(cred.ServerKey, kindServer) {
		return nil, fmt.Errorf("key file %s holds no server key; remove it to enrol again", n.cfg.KeyFile)
	}
	if fi, err := os.Stat(n.cfg.KeyFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(n.cfg.KeyFile, 0o600); err != nil {
			return nil, fmt.Errorf("key file %s is readable by others and cannot be made private: %w", n.cfg.KeyFile, err)
		}
		n.log.Warn("federation: key file was readable by others; made it 0600", "path", n.cfg.KeyFile)
	}
	return &cred, nil
}

// saveKey writes the key file atomically with mode 0600.
func (n *Node) saveKey(cred *serverCredential) error {
	data, err := json.MarshalIndent(cred, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(n.cfg.KeyFile)
	f, err := os.CreateTemp(dir, ".server-key-*") // created 0600
	if err != nil {
		return fmt.Errorf("write key file: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, n.cfg.KeyFile)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write key file (server %s joined; revoke it at home): %w", cred.ServerID, err)
	}
	return nil
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

// ReportRoom sends home the whole state of a room; call it on every
// change (members or properties), and once with Closed set when the room
// ends. Home keeps the latest snapshot per room, so a lost report is
// corrected by the next one. A snapshot home has not acknowledged is kept
// and resent with the next announce, until home has it or a newer
// snapshot of the room replaces it; one refused by home (4xx) is dropped.
// ReportRoom returns nil once home has the snapshot (or a newer one), and
// ErrNotJoined before Run has joined, in which case the snapshot is sent
// after the join.
func (n *Node) ReportRoom(ctx context.Context, rep RoomReport) error {
	if err := rep.validate(); err != nil {
		return err
	}
	rep.Members = slices.Clone(rep.Members)
	rep.Properties = maps.Clone(rep.Properties)
	n.mu.Lock()
	p := pendingReport{report: rep, seq: n.seq.Add(1)}
	n.pending[rep.RoomID] = p
	cred := n.cred
	n.mu.Unlock()
	if cred == nil {
		return ErrNotJoined
	}
	return n.send(ctx, cred, p)
}

// send posts one snapshot and settles its pending entry.
func (n *Node) send(ctx context.Context, cred *serverCredential, p pendingReport) error {
	req := roomRequest{NodeID: cred.NodeID, RoomReport: p.report, Seq: p.seq}
	var res roomResponse
	err := n.postJSON(ctx, PathRooms, cred.ServerKey, req, &res)
	var he *HomeError
	// Home's answer settles the snapshot, even a refusal: resending the
	// same body cannot change it.
	// A report refused until the next announce waits for it.
	if err == nil || (errors.As(err, &he) && he.Status < 500 && he.Status != http.StatusTooManyRequests && !errors.Is(err, ErrNotAnnounced)) {
		n.mu.Lock()
		if cur, ok := n.pending[p.report.RoomID]; ok && cur.seq == p.seq {
			delete(n.pending, p.report.RoomID)
		}
		n.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("report room %q: %w", p.report.RoomID, err)
	}
	return nil
}

// flush resends pending snapshots, stopping at the first that fails.
func (n *Node) flush(ctx context.Context) error {
	cred := n.credential()
	n.mu.Lock()
	todo := slices.Collect(maps.Values(n.pending))
	n.mu.Unlock()
	slices.SortFunc(todo, func(a, b pendingReport) int { return cmp.Compare(a.seq, b.seq) })
	for _, p := range todo {
		err := n.send(ctx, cred, p)
		if fatal(err) {
			return err
		}
		var he *HomeError
		if err != nil && !errors.As(err, &he) {
			return nil // home unreachable: try again next time
		}
	}
	return nil
}

func (n *Node) postJSON(ctx context.Context, path, key string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	defer cancel()
	return n.call(ctx, path, key, "application/json", bytes.NewReader(data), int64(len(data)), out)
}

// call POSTs body to home and decodes the JSON answer into out; an error
// answer becomes a *HomeError.
func (n *Node) call(ctx context.Context, path, key, contentType string, body io.Reader, size int64, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.base.JoinPath(path).String(), body)
	if err != nil {
		return err
	}
	req.ContentLength = size
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", contentType)
	return doJSON(n.cfg.HTTPClient, req, out)
}

// The bounds on the code and the message of home's error answers, which
// a HomeError carries into errors and log lines.
const (
	maxErrorCode    = 64
	maxErrorMessage = 256
)

// printable returns s as one line of valid UTF-8 of at most max bytes:
// invalid bytes and control characters become U+FFFD, and a longer s is
// cut at a rune boundary and ends with "…".
func printable(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
	if len(s) <= max {
		return s
	}
	const ellipsis = "…"
	cut := max - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// maxAnswer bounds the answers of home that doJSON reads.
const maxAnswer = 1 << 20

// doJSON sends req and decodes a JSON answer of at most maxAnswer bytes;
// a longer one is an error, read no further.
func doJSON(c *http.Client, req *http.Request, out any) error {
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// The read ends with req's context even when the body does not heed
	// it: after 101 Switching Protocols the body is the connection itself.
	stop := context.AfterFunc(req.Context(), func() { resp.Body.Close() })
	defer stop()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		if cerr := req.Context().Err(); cerr != nil {
			err = cerr
		}
		return fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		he := &HomeError{Status: resp.StatusCode}
		var eb errorBody
		if json.Unmarshal(data, &eb) == nil {
			// Home's words go into errors and logs: bounded, one line.
			he.Code, he.Message = printable(eb.Code, maxErrorCode), printable(eb.Error, maxErrorMessage)
		}
		return he
	}
	if len(data) > maxAnswer {
		return fmt.Errorf("read answer: over %d bytes", maxAnswer)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}
