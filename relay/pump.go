package relay

import (
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/muster-gg/muster/internal/wsframe"
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
const headroom = wsframe.MaxHeader

var bufPool = sync.Pool{New: func() any { b := make([]byte, headroom+chunk); return &b }}

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
	frame    wsframe.Header
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
		avail := min(int64(end-pos), int64(p.frame.Length)-p.frameOff)
		hs := p.pieceHeader(p.buf[:pos], avail)
		vs, ve = pos-hs, pos+int(avail)
		n += avail
		pos = ve
	}

	var h wsframe.Header
	for pos < end {
		ok, herr := parseHeader(p.buf[pos:end], &h)
		if herr != nil {
			_ = flush(nil)
			return 0, herr
		}
		if !ok {
			break
		}
		if h.Masked != p.fromClient { // clients mask, servers do not
			_ = flush(nil)
			return 0, errProtocol
		}
		length := int64(h.Length) // at most maxFrame
		total := int64(h.Size) + length
		if h.Op >= wsframe.OpClose {
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
		if (h.Op == wsframe.OpContinuation) != p.inMessage {
			_ = flush(nil)
			return 0, errProtocol
		}
		if lim := p.s.rl.cfg.ReadLimit; lim >= 0 && p.messageLen+length > lim {
			_ = flush(nil)
			return 0, errTooBig
		}
		if int64(end-pos) >= total {
			p.messageLen += length
			p.inMessage = !h.Fin
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
			n += length
			continue
		}
		if total <= chunk {
			break // short: wait for the rest and pass it on whole
		}
		// A long frame: pass on what has come of it as a piece.
		p.inFrame, p.frame, p.frameOff = true, h, 0
		p.inMessage = true
		p.messageLen += length
		start := pos + h.Size
		avail := int64(end - start)
		if avail == 0 {
			pos = end
			break
		}
		var hb [wsframe.MaxHeader]byte
		hs := p.pieceHeader(hb[:], avail)
		copy(p.buf[start-hs:start], hb[wsframe.MaxHeader-hs:])
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
	op := byte(wsframe.OpContinuation)
	if p.frameOff == 0 {
		op = f.Op
	}
	last := p.frameOff+avail == int64(f.Length)
	hs := wsframe.HeaderSize(f.Masked, uint64(avail))
	wsframe.PutHeader(b[len(b)-hs:], wsframe.Header{Fin: last && f.Fin, Op: op, Masked: f.Masked, Key: rotate(f.Key, p.frameOff), Length: uint64(avail)})
	p.frameOff += avail
	if last {
		p.inFrame = false
		if f.Fin {
			p.inMessage, p.messageLen = false, 0
		}
	}
	return hs
}

// control deals with a control frame from the source (frame is the whole
// frame as it came).
func (p *pump) control(h wsframe.Header, frame []byte) error {
	var payload [wsframe.MaxControl]byte
	pl := payload[:copy(payload[:], frame[h.Size:])]
	if h.Masked {
		wsframe.Mask(h.Key, pl)
	}
	switch h.Op {
	case wsframe.OpPing:
		if err := p.src.control(wsframe.OpPong, pl); err != nil {
			return errSourceGone
		}
		if !p.fromClient && p.s.probeClient() != nil {
			return errWrite // our destination, the client, is gone
		}
	case wsframe.OpPong:
		if p.fromClient {
			select {
			case p.s.pong <- struct{}{}:
			default:
			}
		}
	case wsframe.OpClose:
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
