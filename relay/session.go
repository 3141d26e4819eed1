package relay

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// chunk is the size of the buffer frames are read into, one per direction
// of a relayed connection. Everything that arrives in one read is written
// on in one write; a frame longer than the buffer is passed on in frames
// of at most this size, so the relay never holds a whole large message in
// memory.
const chunk = 64 << 10

// headroom is kept free in front of the data in a buffer, so that the
// header of the next piece of a long frame can be written in front of its
// payload and both go out in one write.
const headroom = maxHeader

var bufPool = sync.Pool{New: func() any { b := make([]byte, headroom+chunk); return &b }}

// closeTimeout bounds the close handshake: how long a side that has been
// sent a close frame may take to answer it.
const closeTimeout = 5 * time.Second

// defaultStallTimeout is how long a write may wait for a peer that reads
// nothing (its TCP window stays shut) before the peer is taken to be gone,
// as nginx's send_timeout; see side.armStall.
const defaultStallTimeout = time.Minute

// side is one of the two connections of a session, written to in whole
// frames only, so that a close frame or a pong can always go out between
// two of them.
type side struct {
	conn net.Conn
	raw  *rawWriter // writes conn, where the platform has one
	// masked is set for the node's side: the relay is its client, and a
	// client's frames are masked (the client's own masks are kept).
	masked bool
	key    [4]byte // masks the frames the relay itself makes

	// While the session is on the event loop (see loop_linux.go), fd is
	// the socket, which the loop alone reads and writes, and conn is
	// closed; spill holds what a write on the loop could not write at
	// once, written first once the session is off the loop.
	onLoop bool
	fd     int
	spill  []byte

	mu        sync.Mutex
	closeSent bool // a close frame has been written; no data follows it
	broken    bool // a write failed

	// stall bounds a write that makes no progress (see armStall); zero
	// means no bound.
	stall time.Duration
	// stallAt is when a write with the connection's own Write moves the
	// write deadline on; guarded by mu.
	stallAt time.Time
	// dl orders the write deadlines of writes that wait with the
	// deadline closing sets, which they must not move.
	dl     sync.Mutex
	ending bool // closing has set the connection's deadline
}

// newSide returns a side for c, whose writes wait at most stall for a
// peer that reads nothing.
func newSide(c net.Conn, stall time.Duration) *side {
	d := &side{stall: stall}
	d.setConn(c)
	return d
}

// setConn makes c the side's connection.
func (d *side) setConn(c net.Conn) {
	d.conn, d.raw = c, newRawWriter(c, d)
}

// errBroken reports a write to a connection on which a write failed
// before, for another writer: the pump that writes data to it must learn
// that it is gone as well.
var errBroken = errors.New("relay: the connection failed")

// write writes frames, unless a close frame has gone out already. It
// returns an error only when the connection failed, now or before.
func (d *side) write(a, b []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.broken {
		return errBroken
	}
	if d.closeSent {
		return nil
	}
	if err := d.writeLocked(a); err != nil {
		return err
	}
	return d.writeLocked(b)
}

func (d *side) writeLocked(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if d.onLoop {
		return d.writeOnLoop(p)
	}
	if err := d.flushLocked(); err != nil {
		return err
	}
	return d.writeConn(p)
}

// flush writes what a write on the loop left over.
func (d *side) flush() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.flushLocked()
}

func (d *side) flushLocked() error {
	if len(d.spill) == 0 || d.broken {
		return nil
	}
	p := d.spill
	d.spill = nil
	return d.writeConn(p)
}

// writeConn writes p to the connection, waiting while it is full, but not
// for longer than the side's stall timeout without progress.
func (d *side) writeConn(p []byte) error {
	var err error
	if d.raw != nil && !testNoRaw {
		err = d.raw.Write(p) // it arms the stall timeout if it has to wait
	} else {
		// This write cannot tell whether it will wait: the deadline is
		// kept between half the stall timeout and all of it ahead.
		if now := time.Now(); d.stall > 0 && now.After(d.stallAt) {
			d.stallAt = now.Add(d.stall / 2)
			d.armStall()
		}
		_, err = d.conn.Write(p)
	}
	if err != nil {
		d.broken = true
		return err
	}
	return nil
}

// control writes a control frame the relay makes, with payload (at most
// maxControl bytes, not masked). It returns an error only when the
// connection failed, now or before.
func (d *side) control(op byte, payload []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.broken {
		return errBroken
	}
	if d.closeSent {
		return nil
	}
	return d.controlLocked(op, payload)
}

func (d *side) controlLocked(op byte, payload []byte) error {
	var f [maxHeader + maxControl]byte
	n := putHeader(f[:], true, op, d.masked, d.key, int64(len(payload)))
	m := copy(f[n:], payload)
	if d.masked {
		mask(d.key, f[n:n+m])
	}
	if op == opClose {
		d.closeSent = true
	}
	return d.writeLocked(f[:n+m])
}

// close sends a close frame with code and reason unless one has gone out;
// StatusNoStatusRcvd sends one without a status.
func (d *side) close(code websocket.StatusCode, reason string) {
	var p [maxControl]byte
	n := 0
	if code != websocket.StatusNoStatusRcvd {
		binary.BigEndian.PutUint16(p[:], uint16(code))
		n = 2 + copy(p[2:], reason)
	}
	_ = d.control(opClose, p[:n])
}

// forwardClose writes a close frame read from the other side as it came,
// unless a close frame has gone out already.
func (d *side) forwardClose(frame []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closeSent || d.broken {
		return
	}
	d.closeSent = true
	_ = d.writeLocked(frame)
}

// closing bounds what is left of the connection: the close handshake, or a
// peer that stopped reading.
func (d *side) closing() {
	d.dl.Lock()
	defer d.dl.Unlock()
	d.ending = true
	_ = d.conn.SetDeadline(time.Now().Add(closeTimeout))
}

// armStall bounds a write that has to wait for the peer: unless the peer
// reads some of it within the stall timeout, the write fails, and the
// session ends as when the peer drops. Without the bound a peer whose TCP
// window stays shut would hold the session, its goroutines, buffers and
// sockets for ever, even after the far side gave up and left, as nothing
// then reads the far side. It is called by a writer, which holds d.mu,
// only when a write waits, so that writes that do not wait cost nothing.
func (d *side) armStall() {
	if d.stall <= 0 {
		return
	}
	d.dl.Lock()
	defer d.dl.Unlock()
	if !d.ending {
		_ = d.conn.SetWriteDeadline(time.Now().Add(d.stall))
	}
}

// disarmStall ends the bound armStall set, after the write.
func (d *side) disarmStall() {
	d.dl.Lock()
	defer d.dl.Unlock()
	if !d.ending {
		_ = d.conn.SetWriteDeadline(time.Time{})
	}
}

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
	if err := s.client.control(opPing, []byte("muster")); err != nil {
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

// pump copies the frames of one direction. It reads as much as the
// source has ready into a large buffer, and writes every whole data frame
// in it on in one write, as it came (a client's frames keep the client's
// mask). It parses only frame headers: to know message boundaries, to
// enforce the read limit, and to take out control frames, which are
// answered hop by hop (pings) or passed on (close frames, with their code
// and reason). A frame that does not fit in the buffer is passed on in
// pieces, each a frame of its own, so that whatever happens the far side
// is always at a frame boundary and can be sent a close frame.
type pump struct {
	s          *session
	src, dst   *side
	fromClient bool
	count      *atomic.Uint64

	bp  *[]byte // from bufPool
	buf []byte
	// p.buf[headroom:end] holds bytes read and not passed on yet.
	end int
	// err is why the pump ended, if it ended on the event loop.
	err error

	// The frame whose payload is being passed on in pieces.
	inFrame  bool
	frame    header
	frameOff int64 // payload bytes of it passed on
	// The message in progress: a data frame without FIN has been passed on.
	inMessage  bool
	messageLen int64
}

// newPump returns the pump from src to dst, with initial, the bytes read
// from src with its handshake, not passed on yet.
func newPump(s *session, src, dst *side, count *atomic.Uint64, initial []byte) *pump {
	p := &pump{s: s, src: src, dst: dst, count: count, bp: bufPool.Get().(*[]byte)}
	p.buf = *p.bp
	p.end = headroom + copy(p.buf[headroom:], initial)
	return p
}

// run pumps until the source closes, fails or breaks the protocol, and
// settles how the other side learns of it. It takes over from where the
// event loop left off, if the pump was on it.
func (p *pump) run() {
	defer bufPool.Put(p.bp)
	err := p.err
	if err != nil {
		// The loop ended the pump: what is left of dst is the close
		// handshake, bounded in time (see finish) before the spill is
		// written, which may hold the close frame the loop forwarded.
		p.dst.closing()
	}
	if ferr := p.dst.flush(); ferr != nil && err == nil {
		err = errWrite
	}
	if err == nil {
		if rc := inqConn(p.src.conn); rc != nil && !testNoInq {
			err = p.copyInq(rc)
		} else {
			err = p.copyReads()
		}
	}
	p.finish(err)
}

// passOn passes on the bytes read and not passed on yet, and keeps what is
// left (part of a header, or a short frame not complete yet) at the start
// of the buffer.
func (p *pump) passOn() error {
	next, err := p.process(p.end)
	if err != nil {
		return err
	}
	p.end = headroom + copy(p.buf[headroom:], p.buf[next:p.end])
	return nil
}

// testNoInq and testNoRaw make pumps use the connection's own Read and
// Write, for benchmarks.
var testNoInq, testNoRaw bool

// copyReads pumps with the connection's own Read, until the source
// closes, fails or breaks the protocol.
func (p *pump) copyReads() error {
	for {
		if err := p.passOn(); err != nil {
			return err
		}
		n, err := p.src.conn.Read(p.buf[p.end:])
		p.end += n
		if err != nil {
			if n > 0 {
				if _, perr := p.process(p.end); perr != nil {
					err = perr
				}
			}
			return err
		}
	}
}

// errClosed reports that the source sent a close frame, which has been
// dealt with.
var errClosed = errors.New("relay: close frame")

// errWrite reports that the destination failed.
var errWrite = errors.New("relay: write failed")

// errSourceGone reports that a write to the source (a pong) failed: the
// source is gone, as when its read fails.
var errSourceGone = errors.New("relay: the source failed")

// finish ends the pump after err.
func (p *pump) finish(err error) {
	if err == errWrite {
		// The destination is gone. The other pump, which reads it, must
		// tell our source (1001) and end. Closing dst would wait for that
		// pump if it is in the middle of a write to our source, made
		// inside its read of dst (copyInq), and that write may wait for
		// our source, which may wait for us to read what it writes: a
		// deadline in the past makes the other pump's next read fail
		// instead, and we read on, dropping what the source sends, so
		// that it reads the close frame, until it closes, for at most the
		// close handshake's time.
		_ = p.dst.conn.SetReadDeadline(time.Unix(1, 0))
		p.src.closing()
		for {
			if _, err := p.src.conn.Read(p.buf); err != nil {
				return
			}
		}
	}
	// Whatever is left of dst is the close handshake, bounded in time
	// before anything is written, so that a peer that stopped reading
	// cannot hold a write (and the side's lock) for ever.
	p.dst.closing()
	switch err {
	case errClosed:
		// All that is left of the source is its side of the handshake.
		p.src.closing()
	case errTooBig, errProtocol:
		code := websocket.StatusMessageTooBig
		if err == errProtocol {
			code = websocket.StatusProtocolError
		}
		p.src.closing()
		p.src.close(code, "")
		p.dst.close(websocket.StatusGoingAway, "")
		// Read on until the source answers, so that what it still sends
		// does not turn our close into a reset it might not read.
		for {
			if _, err := p.src.conn.Read(p.buf); err != nil {
				break
			}
		}
	default: // the source dropped, or a deadline of the close handshake passed
		p.dst.close(websocket.StatusGoingAway, "")
		_ = p.src.conn.Close()
	}
}

// process passes on what p.buf[headroom:end] holds and returns where the
// bytes it has not used start.
func (p *pump) process(end int) (next int, err error) {
	pos := headroom
	// vs:ve is a run of whole frames, as they came, not written yet.
	vs, ve := pos, pos
	var n int64
	flush := func(piece []byte) error {
		if err := p.dst.write(p.buf[vs:ve], piece); err != nil {
			return errWrite
		}
		p.count.Add(uint64(n))
		n = 0
		return nil
	}

	if p.inFrame && pos < end {
		// The next piece of a long frame: a header of our own in the
		// headroom, in front of the payload.
		avail := min(int64(end-pos), p.frame.length-p.frameOff)
		hs := p.pieceHeader(p.buf[:pos], avail)
		vs, ve = pos-hs, pos+int(avail)
		n += avail
		pos = ve
	}

	for pos < end {
		h, ok, herr := parseHeader(p.buf[pos:end])
		if herr != nil {
			_ = flush(nil)
			return 0, herr
		}
		if !ok {
			break
		}
		if h.masked != p.fromClient { // clients mask, servers do not
			_ = flush(nil)
			return 0, errProtocol
		}
		total := int64(h.size) + h.length
		if h.op >= opClose {
			if int64(end-pos) < total {
				break
			}
			if err := flush(nil); err != nil {
				return 0, err
			}
			frame := p.buf[pos : pos+int(total)]
			pos += int(total)
			vs, ve = pos, pos
			if err := p.control(h, frame); err != nil {
				return 0, err
			}
			continue
		}
		if (h.op == opContinuation) != p.inMessage {
			_ = flush(nil)
			return 0, errProtocol
		}
		if lim := p.s.rl.cfg.ReadLimit; lim >= 0 && p.messageLen+h.length > lim {
			_ = flush(nil)
			return 0, errTooBig
		}
		if int64(end-pos) >= total {
			p.messageLen += h.length
			p.inMessage = !h.fin
			if !p.inMessage {
				p.messageLen = 0
			}
			if ve != pos { // only after a piece, whose header left a gap
				if err := flush(nil); err != nil {
					return 0, err
				}
				vs = pos
			}
			pos += int(total)
			ve = pos
			n += h.length
			continue
		}
		if total <= chunk {
			break // short: wait for the rest and pass it on whole
		}
		// A long frame: pass on what has come of it as a piece.
		p.inFrame, p.frame, p.frameOff = true, h, 0
		p.inMessage = true
		p.messageLen += h.length
		start := pos + h.size
		avail := int64(end - start)
		if avail == 0 {
			pos = end
			break
		}
		var hb [maxHeader]byte
		hs := p.pieceHeader(hb[:], avail)
		copy(p.buf[start-hs:start], hb[maxHeader-hs:])
		if err := p.dst.write(p.buf[vs:ve], p.buf[start-hs:end]); err != nil {
			return 0, errWrite
		}
		p.count.Add(uint64(n + avail))
		n = 0
		vs, ve, pos = end, end, end
	}
	if err := flush(nil); err != nil {
		return 0, err
	}
	return pos, nil
}

// pieceHeader writes, at the end of b, the header of the next avail bytes
// of the frame being passed on in pieces, records them as passed on, and
// returns the header's size.
func (p *pump) pieceHeader(b []byte, avail int64) int {
	f := &p.frame
	op := byte(opContinuation)
	if p.frameOff == 0 {
		op = f.op
	}
	last := p.frameOff+avail == f.length
	hs := headerSize(f.masked, avail)
	putHeader(b[len(b)-hs:], last && f.fin, op, f.masked, rotate(f.key, p.frameOff), avail)
	p.frameOff += avail
	if last {
		p.inFrame = false
		if f.fin {
			p.inMessage, p.messageLen = false, 0
		}
	}
	return hs
}

// control deals with a control frame from the source (frame is the whole
// frame as it came).
func (p *pump) control(h header, frame []byte) error {
	var payload [maxControl]byte
	pl := payload[:copy(payload[:], frame[h.size:])]
	if h.masked {
		mask(h.key, pl)
	}
	switch h.op {
	case opPing:
		if err := p.src.control(opPong, pl); err != nil {
			return errSourceGone
		}
		if !p.fromClient && p.s.probeClient() != nil {
			return errWrite // our destination, the client, is gone
		}
	case opPong:
		if p.fromClient {
			select {
			case p.s.pong <- struct{}{}:
			default:
			}
		}
	case opClose:
		valid := len(pl) == 0
		if len(pl) >= 2 {
			code := websocket.StatusCode(binary.BigEndian.Uint16(pl))
			valid = sendable(code) && utf8.Valid(pl[2:])
		}
		if !valid {
			return errProtocol
		}
		p.dst.forwardClose(frame)
		return errClosed
	}
	return nil
}
