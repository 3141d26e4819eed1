package room

import (
	"encoding/binary"
	"errors"
)

// WebSocket opcodes (RFC 6455 section 5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa
)

// maxControlPayload is the largest payload of a control frame.
const maxControlPayload = 125

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
	for pos < len(data) {
		fr, ok, err := r.header(data[pos:])
		if err != nil {
			r.partial = nil
			return err
		}
		if ok && fr.skip {
			if end := int64(pos) + int64(fr.size) + fr.length; end > int64(len(data)) {
				r.skip, pos = end-int64(len(data)), len(data)
			} else {
				pos = int(end)
			}
			first := !r.drop
			r.inMsg, r.drop = !fr.fin, !fr.fin
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
		if !ok || int64(len(data)-pos) < int64(fr.size)+fr.length {
			break
		}
		pl := data[pos+fr.size : pos+fr.size+int(fr.length)]
		pos += fr.size + int(fr.length)
		maskBytes(fr.key, pl)
		more := true
		switch {
		case fr.op >= opClose:
			more = on(fr.op, pl)
		case fr.fin && !r.inMsg:
			more = on(fr.op, pl)
		default:
			if !r.inMsg {
				r.msg = append(r.msg[:0], byte(fr.op))
			}
			r.msg = append(r.msg, pl...)
			r.inMsg = !fr.fin
			if fr.fin {
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

// wsFrame is a parsed frame header.
type wsFrame struct {
	fin    bool
	op     byte
	key    [4]byte
	length int64 // payload bytes
	size   int   // header bytes
	skip   bool  // its message is over the limit: the frame is skipped (its key is not read)
}

// header parses the frame header at the start of b; ok is false while b
// does not hold all of it. A frame is refused when it breaks RFC 6455 for
// a client (unmasked, reserved bits, an unknown opcode, a control frame
// fragmented or long, a continuation out of place). A frame that would
// make a message longer than the read limit, or belongs to one that did,
// is given with skip set once its length is known.
func (r *wsReader) header(b []byte) (f wsFrame, ok bool, err error) {
	if len(b) < 2 {
		return f, false, nil
	}
	b0, b1 := b[0], b[1]
	if b0&0x70 != 0 || b1&0x80 == 0 {
		return f, false, errWSProtocol
	}
	f.fin, f.op = b0&0x80 != 0, b0&0x0f
	n, length := 2, uint64(b1&0x7f)
	switch length {
	case 126:
		if len(b) < 4 {
			return f, false, nil
		}
		length, n = uint64(binary.BigEndian.Uint16(b[2:])), 4
	case 127:
		if len(b) < 10 {
			return f, false, nil
		}
		length, n = binary.BigEndian.Uint64(b[2:]), 10
	}
	switch f.op {
	case opText, opBinary:
		if r.inMsg {
			return f, false, errWSProtocol
		}
	case opContinuation:
		if !r.inMsg {
			return f, false, errWSProtocol
		}
	case opClose, opPing, opPong:
		if !f.fin || length > maxControlPayload {
			return f, false, errWSProtocol
		}
	default:
		return f, false, errWSProtocol
	}
	if f.op < opClose {
		sofar := uint64(0)
		if r.inMsg && !r.drop {
			sofar = uint64(len(r.msg) - 1)
		}
		if r.drop || length > uint64(r.limit) || sofar+length > uint64(r.limit) {
			// A length near 2^64 is skipped as 2^62 bytes: the same,
			// without overflowing.
			f.skip, f.size, f.length = true, n+4, int64(min(length, 1<<62))
			return f, true, nil
		}
	}
	if len(b) < n+4 {
		return f, false, nil
	}
	copy(f.key[:], b[n:n+4])
	f.length, f.size = int64(length), n+4
	return f, true, nil
}

// maskBytes XORs b with key, in place.
func maskBytes(key [4]byte, b []byte) {
	for i := range b {
		b[i] ^= key[i&3]
	}
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
