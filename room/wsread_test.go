package room

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/muster-gg/muster/internal/wsframe"
)

// clientFrame is a frame as a client sends it: masked with key.
func clientFrame(fin bool, op byte, key [4]byte, payload []byte) []byte {
	b := []byte{op, 0x80}
	if fin {
		b[0] |= 0x80
	}
	switch n := len(payload); {
	case n > 0xffff:
		b[1] |= 127
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	case n > 125:
		b[1] |= 126
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b[1] |= byte(n)
	}
	b = append(b, key[:]...)
	start := len(b)
	b = append(b, payload...)
	wsframe.Mask(key, b[start:])
	return b
}

// readAll feeds b to a reader in pieces of size step (all at once for 0)
// and returns what it gave out, one line per message, and its error.
func readAll(limit int64, b []byte, step int) (string, error) {
	r := wsReader{limit: limit}
	var out bytes.Buffer
	stopped := false // a close frame ends the connection: nothing after it is read
	on := func(op byte, pl []byte) bool {
		fmt.Fprintf(&out, "%d %q\n", op, pl)
		stopped = op == wsframe.OpClose
		return !stopped
	}
	b = bytes.Clone(b) // feed unmasks in place
	if step <= 0 {
		step = len(b)
	}
	for len(b) > 0 && !stopped {
		n := min(step, len(b))
		if err := r.feed(b[:n], on); err != nil {
			return out.String(), err
		}
		b = b[n:]
	}
	return out.String(), nil
}

func TestWSReaderJoinsFragmentsAroundControlFrames(t *testing.T) {
	key := [4]byte{1, 2, 3, 4}
	var in []byte
	in = append(in, clientFrame(true, wsframe.OpText, key, []byte(`{"type":"input","data":1}`))...)
	in = append(in, clientFrame(false, wsframe.OpText, key, []byte("hel"))...)
	in = append(in, clientFrame(true, wsframe.OpPing, key, []byte("p"))...)
	in = append(in, clientFrame(false, wsframe.OpContinuation, key, []byte("lo "))...)
	in = append(in, clientFrame(true, wsframe.OpContinuation, key, bytes.Repeat([]byte("w"), 300))...)
	in = append(in, clientFrame(true, wsframe.OpBinary, key, []byte{0, 1, 2})...)
	in = append(in, clientFrame(true, wsframe.OpClose, key, []byte{3, 232})...)
	in = append(in, clientFrame(true, wsframe.OpText, key, []byte("after the close"))...)
	want := fmt.Sprintf("1 %q\n9 \"p\"\n1 %q\n2 \"\\x00\\x01\\x02\"\n8 \"\\x03\\xe8\"\n",
		`{"type":"input","data":1}`, "hello "+string(bytes.Repeat([]byte("w"), 300)))
	for _, step := range []int{0, 1, 2, 7, 100} {
		got, err := readAll(1024, in, step)
		if err != nil || got != want {
			t.Fatalf("in pieces of %d: got %s, %v; want %s", step, got, err, want)
		}
	}
}

func TestWSReaderRefuses(t *testing.T) {
	key := [4]byte{9, 8, 7, 6}
	unmasked := clientFrame(true, wsframe.OpText, key, []byte("x"))
	unmasked[1] &^= 0x80
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"unmasked", unmasked, errWSProtocol},
		{"reserved bit", append([]byte{0xc1}, clientFrame(true, wsframe.OpText, key, nil)[1:]...), errWSProtocol},
		{"unknown opcode", clientFrame(true, 0x3, key, nil), errWSProtocol},
		{"fragmented ping", clientFrame(false, wsframe.OpPing, key, nil), errWSProtocol},
		{"long ping", clientFrame(true, wsframe.OpPing, key, make([]byte, 126)), errWSProtocol},
		{"continuation first", clientFrame(true, wsframe.OpContinuation, key, nil), errWSProtocol},
		{"text inside a message", append(clientFrame(false, wsframe.OpText, key, []byte("a")), clientFrame(true, wsframe.OpText, key, nil)...), errWSProtocol},
	}
	for _, tc := range cases {
		for _, step := range []int{0, 1} {
			if _, err := readAll(64, tc.in, step); err != tc.want {
				t.Errorf("%s (pieces of %d): %v, want %v", tc.name, step, err, tc.want)
			}
		}
	}
}

// TestWSReaderSkipsAMessageOverTheLimit: a message over the limit is
// given out as opTooBig, once, at its first frame past the limit; its
// bytes are skipped, and the frames after it are read on, as are control
// frames between its fragments.
func TestWSReaderSkipsAMessageOverTheLimit(t *testing.T) {
	key := [4]byte{9, 8, 7, 6}
	cat := func(frames ...[]byte) []byte { return bytes.Join(frames, nil) }
	closeFrame := clientFrame(true, wsframe.OpClose, key, []byte{3, 241})
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"frame over the limit", cat(clientFrame(true, wsframe.OpText, key, make([]byte, 65)), clientFrame(true, wsframe.OpText, key, []byte("a")), closeFrame),
			"255 \"\"\n1 \"a\"\n8 \"\\x03\\xf1\"\n"},
		{"message over the limit", cat(clientFrame(false, wsframe.OpText, key, make([]byte, 40)), clientFrame(false, wsframe.OpContinuation, key, make([]byte, 40)),
			clientFrame(true, wsframe.OpPing, key, []byte("p")), clientFrame(true, wsframe.OpContinuation, key, make([]byte, 300)), closeFrame),
			"255 \"\"\n9 \"p\"\n8 \"\\x03\\xf1\"\n"},
		{"a length near 2^64", cat([]byte{0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, key[:], closeFrame),
			"255 \"\"\n"},
	}
	for _, tc := range cases {
		for _, step := range []int{0, 1, 3} {
			if got, err := readAll(64, tc.in, step); err != nil || got != tc.want {
				t.Errorf("%s (pieces of %d): %s, %v; want %s", tc.name, step, got, err, tc.want)
			}
		}
	}
}

// FuzzWSReader: whatever a client sends, the reader neither panics nor
// holds more than a message's limit, and gives out the same messages and
// error however the bytes are split by the socket.
func FuzzWSReader(f *testing.F) {
	key := [4]byte{1, 2, 3, 4}
	f.Add(clientFrame(true, wsframe.OpText, key, []byte(`{"type":"input","data":{"x":1,"y":2}}`)), uint8(3))
	f.Add(append(clientFrame(false, wsframe.OpBinary, key, []byte("ab")), clientFrame(true, wsframe.OpContinuation, key, []byte("cd"))...), uint8(1))
	f.Add(clientFrame(true, wsframe.OpText, key, make([]byte, 200)), uint8(9))
	f.Add(clientFrame(true, wsframe.OpClose, key, []byte{3, 232, 'x'}), uint8(2))
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		const limit = 256
		whole, werr := readAll(limit, in, 0)
		split, serr := readAll(limit, in, int(step))
		if whole != split || werr != serr {
			t.Fatalf("whole: %s %v\nin pieces of %d: %s %v", whole, werr, step, split, serr)
		}
		r := wsReader{limit: limit}
		_ = r.feed(bytes.Clone(in), func(byte, []byte) bool { return true })
		if len(r.partial) > limit+14 || len(r.msg) > limit+1 {
			t.Fatalf("the reader holds %d bytes of a frame and %d of a message, limit %d", len(r.partial), len(r.msg), limit)
		}
	})
}
