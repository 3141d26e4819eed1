package wsframe

import (
	"encoding/binary"
	"errors"
)

// The opcodes of RFC 6455 section 5.2: data frames below OpClose, control
// frames from it on.
const (
	OpContinuation = 0x0 // a later fragment of a message
	OpText         = 0x1 // the first frame of a text message
	OpBinary       = 0x2 // the first frame of a binary message
	OpClose        = 0x8 // a close frame: a status code and a reason
	OpPing         = 0x9 // a ping, to be answered with a pong
	OpPong         = 0xa // a pong
)

// MaxControl is the largest payload of a control frame.
const MaxControl = 125

// MaxHeader is the longest frame header: 2 bytes, an 8-byte length and a
// 4-byte mask key.
const MaxHeader = 14

// ErrProtocol reports a frame header that breaks RFC 6455 whoever sent
// it; callers answer with their own error (and a close with 1002).
var ErrProtocol = errors.New("wsframe: frame header breaks RFC 6455")

// Header is a frame header.
type Header struct {
	Fin    bool    // the last frame of its message
	Op     byte    // the opcode
	Masked bool    // the payload is masked with Key
	Key    [4]byte // the mask key, when Masked
	Length uint64  // payload bytes; read as sent, up to 2^64-1
	Size   int     // header bytes, mask key included; PutHeader does not read it
}

// Parse parses the frame header at the start of b into h, all of which
// it sets. It returns ok once b holds the whole header, and ErrProtocol as
// soon as the bytes b holds break RFC 6455 whatever follows them: a
// reserved bit set, an unknown opcode, a control frame not final or
// longer than MaxControl. A length need not be in its shortest form.
//
// While b holds only part of a header (ok false, err nil), h holds what
// those bytes give, so that a caller may apply its own rules early: Fin
// and Op once b holds a byte; Masked and Size (known from the second
// byte) once it holds two; Length once it holds all but the mask key.
// Fields not known yet are zero.
//
// The header is written through a pointer, not returned: a Header does
// not fit in registers, and a returned one is copied whole, in wide loads
// of the narrow stores that made it, which costs more than the parse on
// the paths that read every frame.
func Parse(b []byte, h *Header) (ok bool, err error) {
	*h = Header{}
	if len(b) == 0 {
		return false, nil
	}
	b0 := b[0]
	h.Fin, h.Op = b0&0x80 != 0, b0&0x0f
	if b0&0x70 != 0 {
		return false, ErrProtocol
	}
	switch h.Op {
	case OpContinuation, OpText, OpBinary:
	case OpClose, OpPing, OpPong:
		if !h.Fin {
			return false, ErrProtocol
		}
	default:
		return false, ErrProtocol
	}
	if len(b) < 2 {
		return false, nil
	}
	b1 := b[1]
	h.Masked = b1&0x80 != 0
	n, length := 2, uint64(b1&0x7f)
	switch length {
	case 126:
		n = 4
	case 127:
		n = 10
	}
	h.Size = n
	if h.Masked {
		h.Size += 4
	}
	if len(b) < n {
		if h.Op >= OpClose && n > 2 && !shortPrefix(b[2:]) {
			return false, ErrProtocol
		}
		return false, nil
	}
	switch n {
	case 4:
		length = uint64(binary.BigEndian.Uint16(b[2:]))
	case 10:
		length = binary.BigEndian.Uint64(b[2:])
	}
	if h.Op >= OpClose && length > MaxControl {
		return false, ErrProtocol
	}
	h.Length = length
	if len(b) < h.Size {
		return false, nil
	}
	if h.Masked {
		h.Key = [4]byte(b[n : n+4])
	}
	return true, nil
}

// shortPrefix reports whether ext, the first bytes of an extended length
// but not its last, can start a length of MaxControl bytes at most: only
// if they are all zero.
func shortPrefix(ext []byte) bool {
	for _, c := range ext {
		if c != 0 {
			return false
		}
	}
	return true
}

// HeaderSize returns the size of the header PutHeader writes for a frame
// with length payload bytes.
func HeaderSize(masked bool, length uint64) int {
	n := 2
	switch {
	case length > 0xffff:
		n += 8
	case length > 125:
		n += 2
	}
	if masked {
		n += 4
	}
	return n
}

// PutHeader writes h (all but its Size) into b, which must have room for
// it (HeaderSize), with its length in the shortest form, and returns its
// size.
func PutHeader(b []byte, h Header) int {
	b[0] = h.Op
	if h.Fin {
		b[0] |= 0x80
	}
	var m byte
	if h.Masked {
		m = 0x80
	}
	n := 2
	switch {
	case h.Length > 0xffff:
		b[1] = m | 127
		binary.BigEndian.PutUint64(b[2:], h.Length)
		n = 10
	case h.Length > 125:
		b[1] = m | 126
		binary.BigEndian.PutUint16(b[2:], uint16(h.Length))
		n = 4
	default:
		b[1] = m | byte(h.Length)
	}
	if h.Masked {
		copy(b[n:], h.Key[:])
		n += 4
	}
	return n
}

// Mask XORs b with key, in place: it masks a payload, and unmasks a
// masked one. b must start at the payload's first byte.
func Mask(key [4]byte, b []byte) {
	for i := range b {
		b[i] ^= key[i&3]
	}
}
