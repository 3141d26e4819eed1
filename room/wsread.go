package room

import (
	"encoding/binary"
	"errors"

	"github.com/muster-gg/muster/internal/wsframe"
)

// opTooBig is the opcode wsReader.feed gives out, with no payload, where
// a message went over the read limit: not a WebSocket opcode (they are
// four bits).
const opTooBig = 0xff

// errWSProtocol is why a frame reader stops: the connection is closed with
// 1002 (protocol error).
var errWSProtocol = errors.New("room: websocket protocol error")

// wsReader parses the frames a client sends, for the event loop: bytes
// come in as the socket gives them (feed), whole messages and control
// frames go out. It keeps the bytes of a frame not yet whole and the
// fragments of a message not yet finished, never more than the read limit
// (and a header) of either. A message over the limit is skipped, not
// kept: the frames after it are read on (the client's answer to the close
// that follows). Client frames must be masked; no extension is
// negotiated.
type wsReader struct {
	limit   int64  // the largest message, in bytes
	partial []byte // the start of a frame not yet whole
	msg     []byte // the fragments of an unfinished message
	inMsg   bool   // a message's first frame came, its last not yet
	drop    bool   // the unfinished message went over the limit: its fragments are skipped
	skip    int64  // bytes of a skipped frame still to come
}

// feed parses b, which is unmasked in place, and calls on for every whole
// message (op text or binary, fragments joined), control frame, and
// message over the limit (opTooBig), in order, until on returns false.
// The payload is good only until on returns. feed returns errWSProtocol
// for a frame that breaks the protocol; nothing after it is parsed.
func (r *wsReader) feed(b []byte, on func(op byte, payload []byte) bool) error {
	if r.skip > 0 {
		n := min(r.skip, int64(len(b)))
		r.skip -= n
		b = b[n:]
	}
	data := b
	if len(r.partial) > 0 {
		r.partial = append(r.partial, b...)
		data = r.partial
	}
	pos := 0
	var fr wsFrame
	for pos < len(data) {
		ok, err := r.header(data[pos:], &fr)
		if err != nil {
			r.partial = nil
			return err
		}
		if ok && fr.skip {
			if end := int64(pos) + int64(fr.Size) + int64(fr.Length); end > int64(len(data)) {
				r.skip, pos = end-int64(len(data)), len(data)
			} else {
				pos = int(end)
			}
			first := !r.drop
			r.inMsg, r.drop = !fr.Fin, !fr.Fin
			r.msg = r.msg[:0]
			if cap(r.msg) > keptReadBuffer {
				r.msg = nil
			}
			if first && !on(opTooBig, nil) {
				r.partial = nil
				return nil
			}
			continue
		}
		if !ok || int64(len(data)-pos) < int64(fr.Size)+int64(fr.Length) {
			break
		}
		pl := data[pos+fr.Size : pos+fr.Size+int(fr.Length)]
		pos += fr.Size + int(fr.Length)
		wsframe.Mask(fr.Key, pl)
		more := true
		switch {
		case fr.Op >= wsframe.OpClose:
			more = on(fr.Op, pl)
		case fr.Fin && !r.inMsg:
			more = on(fr.Op, pl)
		default:
			if !r.inMsg {
				r.msg = append(r.msg[:0], byte(fr.Op))
			}
			r.msg = append(r.msg, pl...)
			r.inMsg = !fr.Fin
			if fr.Fin {
				more = on(r.msg[0], r.msg[1:])
				r.msg = r.msg[:0]
				if cap(r.msg) > keptReadBuffer {
					r.msg = nil
				}
			}
		}
		if !more {
			r.partial = nil
			return nil
		}
	}
	rest := data[pos:]
	switch {
	case len(rest) == 0:
		r.partial = r.partial[:0]
		if cap(r.partial) > keptReadBuffer {
			r.partial = nil
		}
	case len(r.partial) > 0:
		r.partial = r.partial[:copy(r.partial, rest)]
	default:
		r.partial = append(r.partial[:0], rest...)
	}
	return nil
}

// wsFrame is a parsed frame header, and what the reader does with it.
type wsFrame struct {
	wsframe.Header
	skip bool // its message is over the limit: the frame is skipped (its key is not read)
}

// header parses the frame header at the start of b into f; ok is false
// while b does not hold all of it. A frame is refused when it breaks RFC 6455 for
// any endpoint (wsframe.Parse) or for a client (unmasked, a continuation
// out of place). A frame that would make a message longer than the read
// limit, or belongs to one that did, is given with skip set once its
// length is known.
func (r *wsReader) header(b []byte, f *wsFrame) (ok bool, err error) {
	h := &f.Header
	f.skip = false
	ok, err = wsframe.Parse(b, h)
	if err != nil || h.Size != 0 && !h.Masked {
		return false, errWSProtocol
	}
	if h.Size == 0 || !ok && len(b) < h.Size-len(h.Key) {
		return false, nil // the length is not whole yet
	}
	switch h.Op {
	case wsframe.OpText, wsframe.OpBinary:
		if r.inMsg {
			return false, errWSProtocol
		}
	case wsframe.OpContinuation:
		if !r.inMsg {
			return false, errWSProtocol
		}
	}
	if h.Op < wsframe.OpClose {
		sofar := uint64(0)
		if r.inMsg && !r.drop {
			sofar = uint64(len(r.msg) - 1)
		}
		if r.drop || h.Length > uint64(r.limit) || sofar+h.Length > uint64(r.limit) {
			// A length near 2^64 is skipped as 2^62 bytes: the same,
			// without overflowing.
			f.skip, h.Length = true, min(h.Length, 1<<62)
			return true, nil
		}
	}
	return ok, nil
}

// appendFrame appends a server frame (unmasked, final) of op and payload
// to b.
func appendFrame(b []byte, op byte, payload []byte) []byte {
	n := len(payload)
	switch {
	case n > 0xffff:
		b = append(b, 0x80|op, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	case n > 125:
		b = append(b, 0x80|op, 126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 0x80|op, byte(n))
	}
	return append(b, payload...)
}

// closePayload is a close frame's payload: the code, then the reason.
func closePayload(code uint16, reason string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, code), reason...)
}

// wireCloseCode reports whether a close frame may carry code (RFC 6455
// section 7.4): 1000-1014 but for 1004-1006, and 3000-4999.
func wireCloseCode(code uint16) bool {
	switch {
	case code == 1004 || code == 1005 || code == 1006:
		return false
	case code >= 1000 && code <= 1014, code >= 3000 && code <= 4999:
		return true
	}
	return false
}
