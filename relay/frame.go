package relay

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"

	"github.com/muster-gg/muster/internal/wsframe"
)

// maxFrame is the largest frame payload accepted, whatever the read limit:
// far above any real message, and far enough from the largest int64 that
// sizes add up without overflow.
const maxFrame = 1 << 50

// errProtocol reports a frame that breaks RFC 6455; its sender is closed
// with 1002 (protocol error).
var errProtocol = errors.New("relay: websocket protocol error")

// errTooBig reports a message above Config.ReadLimit; its sender is closed
// with 1009 (message too big).
var errTooBig = errors.New("relay: message above the read limit")

// parseHeader parses the frame header at the start of b into h; ok is
// false while b does not hold all of it. Beside what breaks RFC 6455 for
// any endpoint (wsframe.Parse), the relay refuses a length above maxFrame.
func parseHeader(b []byte, h *wsframe.Header) (ok bool, err error) {
	ok, err = wsframe.Parse(b, h)
	if err != nil || h.Length > maxFrame {
		return false, errProtocol
	}
	return ok, nil
}

// rotate returns the mask key that masks a payload starting off bytes into
// a frame masked with key, so that a frame can be split without touching
// its payload.
func rotate(key [4]byte, off int64) [4]byte {
	o := int(off & 3)
	return [4]byte{key[o], key[(o+1)&3], key[(o+2)&3], key[(o+3)&3]}
}

// acceptKey is the Sec-WebSocket-Accept answer to a Sec-WebSocket-Key.
func acceptKey(key string) string {
	h := sha1.New()
	h.Write([]byte(key))
	h.Write([]byte("258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}
