package wsframe_test

import (
	"fmt"

	"github.com/muster-gg/muster/internal/wsframe"
)

// A client's masked text frame, written, then read back as it comes in,
// a byte at a time.
func Example() {
	payload := []byte("hello")
	h := wsframe.Header{Fin: true, Op: wsframe.OpText, Masked: true, Key: [4]byte{1, 2, 3, 4}, Length: uint64(len(payload))}
	frame := make([]byte, wsframe.HeaderSize(h.Masked, h.Length), wsframe.MaxHeader+len(payload))
	wsframe.PutHeader(frame, h)
	start := len(frame)
	frame = append(frame, payload...)
	wsframe.Mask(h.Key, frame[start:])

	var got wsframe.Header
	for n := 0; n <= len(frame); n++ {
		ok, err := wsframe.Parse(frame[:n], &got)
		if err != nil {
			fmt.Println(err)
			return
		}
		if ok {
			pl := frame[got.Size : got.Size+int(got.Length)]
			wsframe.Mask(got.Key, pl)
			fmt.Printf("whole after %d bytes: op %d, fin %v, %q\n", n, got.Op, got.Fin, pl)
			return
		}
	}
	// Output: whole after 6 bytes: op 1, fin true, "hello"
}
