package relay

import (
	"crypto/sha1"
	"encoding/base64"
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

// maxHeader is the longest frame header: 2 bytes, an 8-byte length and a
// 4-byte mask key.
const maxHeader = 14

// maxFrame is the largest frame payload accepted, whatever the read limit:
// far above any real message, and far enough from the largest int64 that
// sizes add up without overflow.
const maxFrame = 1 << 50

// maxControl is the largest payload of a control frame.
const maxControl = 125

// errProtocol reports a frame that breaks RFC 6455; its sender is closed
// with 1002 (protocol error).
var errProtocol = errors.New("relay: websocket protocol error")

// errTooBig reports a message above Config.ReadLimit; its sender is closed
// with 1009 (message too big).
var errTooBig = errors.New("relay: message above the read limit")

// header is a parsed frame header.
type header struct {
	fin    bool
	op     byte
	masked bool
	key    [4]byte
	length int64 // payload bytes
	size   int   // header bytes
}

// parseHeader parses the frame header at the start of b. ok is false when
// b does not hold the whole header yet. Only what the relay depends on is
// checked: reserved bits (no extension is negotiated), known opcodes,
// control frames unfragmented and short, and a length that fits.
func parseHeader(b []byte) (h header, ok bool, err error) {
	if len(b) < 2 {
		return h, false, nil
	}
	b0, b1 := b[0], b[1]
	if b0&0x70 != 0 {
		return h, false, errProtocol
	}
	h.fin = b0&0x80 != 0
	h.op = b0 & 0x0f
	h.masked = b1&0x80 != 0
	n := 2
	length := int64(b1 & 0x7f)
	switch length {
	case 126:
		if len(b) < 4 {
			return h, false, nil
		}
		length = int64(binary.BigEndian.Uint16(b[2:]))
		n = 4
	case 127:
		if len(b) < 10 {
			return h, false, nil
		}
		u := binary.BigEndian.Uint64(b[2:])
		if u > maxFrame {
			return h, false, errProtocol
		}
		length = int64(u)
		n = 10
	}
	if h.masked {
		if len(b) < n+4 {
			return h, false, nil
		}
		copy(h.key[:], b[n:n+4])
		n += 4
	}
	h.length, h.size = length, n
	switch h.op {
	case opContinuation, opText, opBinary:
	case opClose, opPing, opPong:
		if !h.fin || h.length > maxControl {
			return h, false, errProtocol
		}
	default:
		return h, false, errProtocol
	}
	return h, true, nil
}

// headerSize returns the size of the header putHeader writes.
func headerSize(masked bool, length int64) int {
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

// putHeader writes a frame header into b, which must have room for it
// (headerSize), and returns its size.
func putHeader(b []byte, fin bool, op byte, masked bool, key [4]byte, length int64) int {
	b[0] = op
	if fin {
		b[0] |= 0x80
	}
	var m byte
	if masked {
		m = 0x80
	}
	n := 2
	switch {
	case length > 0xffff:
		b[1] = m | 127
		binary.BigEndian.PutUint64(b[2:], uint64(length))
		n = 10
	case length > 125:
		b[1] = m | 126
		binary.BigEndian.PutUint16(b[2:], uint16(length))
		n = 4
	default:
		b[1] = m | byte(length)
	}
	if masked {
		copy(b[n:], key[:])
		n += 4
	}
	return n
}

// rotate returns the mask key that masks a payload starting off bytes into
// a frame masked with key, so that a frame can be split without touching
// its payload.
func rotate(key [4]byte, off int64) [4]byte {
	o := int(off & 3)
	return [4]byte{key[o], key[(o+1)&3], key[(o+2)&3], key[(o+3)&3]}
}

// mask XORs b with key, in place.
func mask(key [4]byte, b []byte) {
	for i := range b {
		b[i] ^= key[i&3]
	}
}

// acceptKey is the Sec-WebSocket-Accept answer to a Sec-WebSocket-Key.
func acceptKey(key string) string {
	h := sha1.New()
	h.Write([]byte(key))
	h.Write([]byte("258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}
