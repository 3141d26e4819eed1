package room

import (
	"bytes"
	"testing"

	"github.com/muster-gg/muster/internal/wsframe"
)

// BenchmarkWSReaderFeed measures the frame reader on the bytes one read
// of a client's socket gives: "inputs", 64 small input messages (the hot
// path: every input of every player); "fragments", 64 messages of two
// fragments each; "large", one 16 KiB message (the unmasking). feed
// unmasks in place, so each pass feeds back the bytes masked again: the
// headers it parses are the same.
func BenchmarkWSReaderFeed(b *testing.B) {
	key := [4]byte{0x1b, 0x2c, 0x3d, 0x4e}
	input := []byte(`{"type":"input","data":{"x":1,"y":2}}`)
	var fragments []byte
	for range 64 {
		fragments = append(fragments, clientFrame(false, wsframe.OpText, key, input[:20])...)
		fragments = append(fragments, clientFrame(true, wsframe.OpContinuation, key, input[20:])...)
	}
	for _, bc := range []struct {
		name string
		in   []byte
	}{
		{"inputs", bytes.Repeat(clientFrame(true, wsframe.OpText, key, input), 64)},
		{"fragments", fragments},
		{"large", clientFrame(true, wsframe.OpBinary, key, make([]byte, 16<<10))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := wsReader{limit: 64 << 10}
			n := 0
			on := func(op byte, pl []byte) bool { n += len(pl); return true }
			b.SetBytes(int64(len(bc.in)))
			b.ReportAllocs()
			for b.Loop() {
				if err := r.feed(bc.in, on); err != nil {
					b.Fatal(err)
				}
			}
			if n == 0 {
				b.Fatal("no payload")
			}
		})
	}
}
