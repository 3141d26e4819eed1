package relay

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
)

// chunk is the size of the buffers messages are copied through. A message
// that fits is forwarded as one frame; a longer one is streamed in frames of
// this size, so the relay never holds a whole large message in memory.
const chunk = 32 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, chunk); return &b }}

// session is one relayed connection: the client's WebSocket accepted here,
// and the upstream one dialled to the target node.
type session struct {
	rl               *Relay
	client, up       *websocket.Conn
	clientNet, upNet *watchedConn // their network connections

	// mu guards client until it is set (a session is tracked, and may be
	// stopped, while its client is still being accepted) and stopped.
	mu      sync.Mutex
	stopped bool

	// once guards the decision of how the session ends: the first pump
	// whose read fails, or a stop from Close, closes the other side; every
	// later attempt is ignored.
	once sync.Once

	// wg holds the pump from the node and any client probe.
	wg sync.WaitGroup
	// ctx ends when the pump from the client has ended; it bounds probes.
	ctx     context.Context
	cancel  context.CancelFunc
	probing atomic.Bool
}

// run pumps messages both ways until both pumps have ended, then releases
// both connections. It returns only when no goroutine of the session is
// left.
func (s *session) run() {
	s.wg.Go(func() { s.pump(s.up, s.upNet, s.client, &s.rl.bytesToClient) })
	s.pump(s.client, s.clientNet, s.up, &s.rl.bytesToNode)
	s.cancel()
	s.wg.Wait()
	_ = s.client.CloseNow()
	_ = s.up.CloseNow()
}

// accepted records the accepted client, or, if the session was stopped in
// the meantime, closes it and reports false.
func (s *session) accepted(c *websocket.Conn, cn *watchedConn) bool {
	s.mu.Lock()
	stopped := s.stopped
	if !stopped {
		s.client, s.clientNet = c, cn
	}
	s.mu.Unlock()
	if stopped {
		_ = c.Close(websocket.StatusGoingAway, "server closing")
	}
	return !stopped
}

// probeClient is called when the node pings. Pings are answered hop by
// hop, so the relay answers the node's ping itself; to keep the node's
// ping-based detection of dead clients working, it then pings the client,
// and a client that does not answer within the relay's probe timeout ends
// the session, which the node sees as 1001 (going away). One probe runs at
// a time.
//
// It runs in the pump that reads the node, which holds s.wg, so adding
// the probe to s.wg is safe.
func (s *session) probeClient() {
	if s.ctx.Err() != nil || !s.probing.CompareAndSwap(false, true) {
		return
	}
	s.wg.Go(func() {
		defer s.probing.Store(false)
		ctx, cancel := context.WithTimeout(s.ctx, s.rl.probeTimeout)
		defer cancel()
		if err := s.client.Ping(ctx); err != nil && s.ctx.Err() == nil {
			s.stop(websocket.StatusGoingAway, "")
		}
	})
}

// pump copies messages from src to dst until one fails. A failed read
// decides how the session ends (see end). A failed write means dst is gone;
// the pump closes dst at once, which makes the other pump's read of dst
// fail, and that pump decides, with dst's close frame if it sent one.
func (s *session) pump(src *websocket.Conn, srcNet *watchedConn, dst *websocket.Conn, count *atomic.Uint64) {
	// Reads and writes are unbounded in time: the session ends when either
	// peer goes, or when Close closes both connections, which unblocks any
	// read or write in progress.
	ctx := context.Background()
	for {
		n, readErr, writeErr := copyMessage(ctx, src, srcNet, dst)
		count.Add(uint64(n))
		switch {
		case writeErr != nil:
			_ = dst.CloseNow()
			return
		case readErr != nil:
			s.end(src, dst, readErr)
			return
		}
	}
}

// end closes dst with the close code and reason that src's read error
// carries, once per session.
func (s *session) end(src, dst *websocket.Conn, readErr error) {
	s.once.Do(func() {
		code, reason := closeFor(readErr)
		_ = src.CloseNow()
		_ = dst.Close(code, reason)
	})
}

// stop closes both sides with code and reason, unless the session is
// already ending. A session whose client is not accepted yet only closes
// the node's side; the client is refused by accepted.
func (s *session) stop(code websocket.StatusCode, reason string) {
	s.mu.Lock()
	s.stopped = true
	accepted := s.client != nil
	s.mu.Unlock()
	if !accepted {
		_ = s.up.Close(code, reason)
		return
	}
	s.once.Do(func() {
		var wg sync.WaitGroup
		wg.Go(func() { _ = s.client.Close(code, reason) })
		_ = s.up.Close(code, reason)
		wg.Wait()
	})
}

// closeFor returns the close code and reason to send to one side when the
// other side's read ended with err.
//
// A close frame is relayed as it came. A close frame without a status
// (1005 on the receiving side) is relayed as a close frame without a status,
// so the far side also sees 1005. Anything else — the peer vanished (1006
// in the RFC's terms), a TLS failure (1015), a protocol error, a message
// above the read limit (that peer is sent 1009 by the library) — is a going
// away (1001) for the other side.
func closeFor(err error) (websocket.StatusCode, string) {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		switch ce.Code {
		case websocket.StatusNoStatusRcvd:
			return websocket.StatusNoStatusRcvd, "" // sent as an empty close frame
		case websocket.StatusAbnormalClosure, websocket.StatusTLSHandshake:
			return websocket.StatusGoingAway, ""
		}
		if sendable(ce.Code) {
			return ce.Code, ce.Reason
		}
	}
	return websocket.StatusGoingAway, ""
}

// sendable reports whether code may appear in a close frame (RFC 6455
// section 7.4).
func sendable(code websocket.StatusCode) bool {
	switch {
	case code >= 1000 && code <= 1014:
		return code != 1004 && code != 1005 && code != 1006
	case code >= 3000 && code <= 4999:
		return true
	}
	return false
}

// errTruncated reports a message whose source connection failed before its
// final frame (see watchedConn).
var errTruncated = errors.New("relay: connection lost inside a message")

// copyMessage copies one message from src to dst and returns the payload
// bytes written. Exactly one of readErr and writeErr is set when it fails.
// The final frame is written only once the whole message has been read and
// srcNet has not failed, so a message cut short is never completed.
func copyMessage(ctx context.Context, src *websocket.Conn, srcNet *watchedConn, dst *websocket.Conn) (n int, readErr, writeErr error) {
	typ, r, err := src.Reader(ctx)
	if err != nil {
		return 0, err, nil
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp

	m, err := io.ReadFull(r, buf)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		if srcNet.failed.Load() {
			return 0, errTruncated, nil
		}
		// The whole message fits: one frame, one write.
		if err := dst.Write(ctx, typ, buf[:m]); err != nil {
			return 0, nil, err
		}
		return m, nil, nil
	case err != nil:
		return 0, err, nil
	}

	w, err := dst.Writer(ctx, typ)
	if err != nil {
		return 0, nil, err
	}
	for {
		if _, err := w.Write(buf[:m]); err != nil {
			return n, nil, err
		}
		n += m
		m, err = io.ReadFull(r, buf)
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			if srcNet.failed.Load() {
				return n, errTruncated, nil
			}
			if m > 0 {
				if _, err := w.Write(buf[:m]); err != nil {
					return n, nil, err
				}
				n += m
			}
			if err := w.Close(); err != nil {
				return n, nil, err
			}
			return n, nil, nil
		case err != nil:
			return n, err, nil
		}
	}
}
