package relay

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/muster-gg/muster/internal/wsframe"
)

// session is one relayed connection: the client's connection hijacked
// here, and the one dialled to the target node, with the frames of both
// directions copied as they are, headers parsed on the way.
type session struct {
	rl         *Relay
	client, up *side

	// mu guards client until it is set (a session is tracked, and may be
	// stopped, while its client is still being accepted), stopped and
	// loop.
	mu      sync.Mutex
	stopped bool
	// loop is the event loop the session's frames are relayed on, nil
	// when they are relayed by the pumps' own goroutines; offLoop is
	// closed when the loop has handed the session back to them.
	loop    *loop
	offLoop chan struct{}

	// wg holds the pump from the node and any client probe.
	wg sync.WaitGroup
	// ctx ends when the session does; it bounds probes.
	ctx     context.Context
	cancel  context.CancelFunc
	probing atomic.Bool
	pong    chan struct{} // a pong from the client, while probing
	upDone  chan struct{} // closed when the pump from the node has ended
}

func newSession(rl *Relay, up net.Conn) *session {
	s := &session{rl: rl, up: newSide(up, rl.stallTimeout), pong: make(chan struct{}, 1), upDone: make(chan struct{})}
	s.up.masked = true
	_, _ = rand.Read(s.up.key[:])
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// run pumps frames both ways until both pumps have ended, then closes both
// connections. upData and clientData are bytes already read past each
// side's handshake. It returns only when no goroutine of the session is
// left.
func (s *session) run(upData, clientData []byte) {
	fromUp := newPump(s, s.up, s.client, &s.rl.bytesToClient, upData)
	fromClient := newPump(s, s.client, s.up, &s.rl.bytesToNode, clientData)
	fromClient.fromClient = true
	s.rl.loops.relay(s, fromUp, fromClient)
	s.wg.Go(func() {
		defer close(s.upDone)
		fromUp.run()
	})
	fromClient.run()
	s.cancel()
	s.wg.Wait()
	_ = s.client.conn.Close()
	_ = s.up.conn.Close()
}

// accepted records the accepted client, or, if the session was stopped in
// the meantime, closes it and reports false.
func (s *session) accepted(c net.Conn) bool {
	s.mu.Lock()
	stopped := s.stopped
	if !stopped {
		s.client = newSide(c, s.rl.stallTimeout)
	}
	s.mu.Unlock()
	if stopped {
		d := &side{conn: c}
		d.closing()
		d.close(websocket.StatusGoingAway, "server closing")
		linger(c)
	}
	return !stopped
}

// linger reads c until its peer closes or its deadline passes, so that
// the close frame just written reaches the peer before the connection
// ends, and closes it.
func linger(c net.Conn) {
	var b [512]byte
	for {
		if _, err := c.Read(b[:]); err != nil {
			break
		}
	}
	_ = c.Close()
}

// defaultProbeTimeout is how long a client has to answer the relay's ping
// after the node pinged.
const defaultProbeTimeout = 15 * time.Second

// probeClient is called when the node pings. Pings are answered hop by
// hop, so the relay answers the node's ping itself; to keep the node's
// ping-based detection of dead clients working, it then pings the client,
// and a client that does not answer within the relay's probe timeout ends
// the session, which the node sees as 1001 (going away). One probe runs at
// a time.
//
// It runs in the pump that reads the node, which holds s.wg, so adding
// the probe to s.wg is safe. It returns an error when the ping could not
// be written: the client is gone, which the pump tells the node at once.
func (s *session) probeClient() error {
	if s.ctx.Err() != nil || !s.probing.CompareAndSwap(false, true) {
		return nil
	}
	select {
	case <-s.pong: // an old answer
	default:
	}
	if err := s.client.control(wsframe.OpPing, []byte("muster")); err != nil {
		s.probing.Store(false)
		return err
	}
	s.wg.Go(func() {
		defer s.probing.Store(false)
		t := time.NewTimer(s.rl.probeTimeout)
		defer t.Stop()
		select {
		case <-s.pong:
		case <-s.ctx.Done():
		case <-t.C:
			s.stop(websocket.StatusGoingAway, "")
		}
	})
	return nil
}

// stop ends the session with code and reason, unless it is already
// ending. The node is told first and the client once the node has
// answered, so that what the node sent before its answer (a room's end,
// say) still reaches the client; the node's answer goes on to the client
// as it came, or, when none comes within the close handshake's time, a
// close frame with code and reason. What the client sends meanwhile is
// dropped. A session whose client is not accepted yet only closes the
// node's side; the client is refused by accepted.
func (s *session) stop(code websocket.StatusCode, reason string) {
	s.mu.Lock()
	s.stopped = true
	accepted := s.client != nil
	l := s.loop
	s.mu.Unlock()
	if l != nil {
		l.handBack(s)
	}
	s.up.closing()
	if !accepted {
		s.up.close(code, reason) // accepted refuses the client, and lingers on the node
		return
	}
	s.client.closing()
	s.up.close(code, reason)
	// The pump from the node ends at the node's answer, or at the
	// deadlines closing set: it has passed on everything before it.
	<-s.upDone
	s.client.close(code, reason)
}

// closeFor returns the close code and reason to send to one side when the
// other side's read ended with err.
//
// A close frame is relayed as it came. A close frame without a status
// (1005 on the receiving side) is relayed as a close frame without a status,
// so the far side also sees 1005. Anything else — the peer vanished (1006
// in the RFC's terms), a TLS failure (1015), a protocol error, a message
// above the read limit (that peer is sent 1009) — is a going away (1001)
// for the other side.
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
