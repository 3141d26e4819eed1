package wsframe

import (
	"bytes"
	"testing"
)

func TestParse(t *testing.T) {
	key := [4]byte{1, 2, 3, 4}
	cases := []struct {
		name string
		in   []byte
		want Header
		ok   bool
		err  error
	}{
		{"empty", nil, Header{}, false, nil},
		{"one byte", []byte{0x81}, Header{Fin: true, Op: OpText}, false, nil},
		{"short unmasked text", []byte{0x81, 0x05}, Header{Fin: true, Op: OpText, Length: 5, Size: 2}, true, nil},
		{"short masked binary", []byte{0x02, 0x83, 1, 2, 3, 4}, Header{Op: OpBinary, Masked: true, Key: key, Length: 3, Size: 6}, true, nil},
		{"mask key not whole", []byte{0x82, 0x83, 1, 2, 3}, Header{Fin: true, Op: OpBinary, Masked: true, Length: 3, Size: 6}, false, nil},
		{"16-bit length", []byte{0x80, 0x7e, 0x01, 0x00}, Header{Fin: true, Op: OpContinuation, Length: 256, Size: 4}, true, nil},
		{"16-bit length not whole", []byte{0x80, 0xfe, 0x01}, Header{Fin: true, Op: OpContinuation, Masked: true, Size: 8}, false, nil},
		{"64-bit length not whole", []byte{0x80, 0x7f, 0x30}, Header{Fin: true, Op: OpContinuation, Size: 10}, false, nil},
		{"64-bit length", []byte{0x82, 0xff, 0, 0, 0, 0, 0, 1, 0, 0, 1, 2, 3, 4}, Header{Fin: true, Op: OpBinary, Masked: true, Key: key, Length: 1 << 16, Size: 14}, true, nil},
		{"64-bit length, top bit set", []byte{0x82, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, Header{Fin: true, Op: OpBinary, Length: 1<<64 - 1, Size: 10}, true, nil},
		{"length not in its shortest form", []byte{0x89, 0x7e, 0, 5}, Header{Fin: true, Op: OpPing, Length: 5, Size: 4}, true, nil},
		{"close", []byte{0x88, 0xfd, 1, 2, 3, 4}, Header{Fin: true, Op: OpClose, Masked: true, Key: key, Length: 125, Size: 6}, true, nil},
		{"pong", []byte{0x8a, 0x00}, Header{Fin: true, Op: OpPong, Size: 2}, true, nil},
		{"reserved bit 1", []byte{0xc1}, Header{Fin: true, Op: OpText}, false, ErrProtocol},
		{"reserved bit 2", []byte{0xa1, 0x00}, Header{Fin: true, Op: OpText}, false, ErrProtocol},
		{"reserved bit 3", []byte{0x91, 0x00}, Header{Fin: true, Op: OpText}, false, ErrProtocol},
		{"unknown data opcode", []byte{0x83}, Header{Fin: true, Op: 0x3}, false, ErrProtocol},
		{"unknown control opcode", []byte{0x8b, 0x00}, Header{Fin: true, Op: 0xb}, false, ErrProtocol},
		{"fragmented ping", []byte{0x09}, Header{Op: OpPing}, false, ErrProtocol},
		{"long ping", []byte{0x89, 0x7e, 0x00, 0x7e}, Header{Fin: true, Op: OpPing, Size: 4}, false, ErrProtocol},
		{"long ping, first length byte", []byte{0x89, 0xfe, 0x01}, Header{Fin: true, Op: OpPing, Masked: true, Size: 8}, false, ErrProtocol},
		{"long close, 64-bit length", []byte{0x88, 0x7f, 0, 0, 0, 0, 0, 0, 1}, Header{Fin: true, Op: OpClose, Size: 10}, false, ErrProtocol},
		{"ping, 64-bit length not whole", []byte{0x89, 0x7f, 0, 0, 0, 0, 0, 0, 0}, Header{Fin: true, Op: OpPing, Size: 10}, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var h Header
			ok, err := Parse(tc.in, &h)
			if h != tc.want || ok != tc.ok || err != tc.err {
				t.Errorf("Parse(% x) = %+v, %v, %v; want %+v, %v, %v", tc.in, h, ok, err, tc.want, tc.ok, tc.err)
			}
		})
	}
}

func TestPutHeader(t *testing.T) {
	key := [4]byte{9, 8, 7, 6}
	cases := []struct {
		name string
		h    Header
		want []byte
	}{
		{"empty text", Header{Fin: true, Op: OpText}, []byte{0x81, 0x00}},
		{"125 bytes, masked", Header{Op: OpBinary, Masked: true, Key: key, Length: 125}, []byte{0x02, 0xfd, 9, 8, 7, 6}},
		{"126 bytes", Header{Fin: true, Op: OpBinary, Length: 126}, []byte{0x82, 0x7e, 0x00, 0x7e}},
		{"65535 bytes", Header{Op: OpContinuation, Length: 0xffff}, []byte{0x00, 0x7e, 0xff, 0xff}},
		{"65536 bytes, masked", Header{Fin: true, Op: OpContinuation, Masked: true, Key: key, Length: 0x10000}, []byte{0x80, 0xff, 0, 0, 0, 0, 0, 1, 0, 0, 9, 8, 7, 6}},
		{"size ignored", Header{Fin: true, Op: OpPing, Size: 14}, []byte{0x89, 0x00}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b [MaxHeader]byte
			n := PutHeader(b[:], tc.h)
			if !bytes.Equal(b[:n], tc.want) {
				t.Errorf("PutHeader(%+v) wrote % x, want % x", tc.h, b[:n], tc.want)
			}
			if hs := HeaderSize(tc.h.Masked, tc.h.Length); hs != n {
				t.Errorf("HeaderSize = %d, PutHeader wrote %d", hs, n)
			}
		})
	}
}

func TestMask(t *testing.T) {
	key := [4]byte{0x1b, 0x2c, 0x3d, 0x4e}
	for n := range 40 {
		in := make([]byte, n)
		for i := range in {
			in[i] = byte(i * 7)
		}
		b := bytes.Clone(in)
		Mask(key, b)
		for i := range b {
			if b[i] != in[i]^key[i%4] {
				t.Fatalf("%d bytes: byte %d is %#x, want %#x", n, i, b[i], in[i]^key[i%4])
			}
		}
		Mask(key, b)
		if !bytes.Equal(b, in) {
			t.Fatalf("%d bytes: masked twice, % x, want % x", n, b, in)
		}
	}
}

// reference decodes the whole header at the start of b, which holds
// MaxHeader bytes at least, the plain way, and tells whether RFC 6455
// allows it from any endpoint.
func reference(b []byte) (h Header, valid bool) {
	h.Fin = b[0]>>7 == 1
	rsv := b[0] >> 4 & 7
	h.Op = b[0] & 15
	h.Masked = b[1]>>7 == 1
	pos := 2
	switch l7 := b[1] & 127; l7 {
	case 126:
		h.Length, pos = uint64(b[2])<<8|uint64(b[3]), 4
	case 127:
		for _, c := range b[2:10] {
			h.Length = h.Length<<8 | uint64(c)
		}
		pos = 10
	default:
		h.Length = uint64(l7)
	}
	if h.Masked {
		copy(h.Key[:], b[pos:pos+4])
		pos += 4
	}
	h.Size = pos
	data := h.Op <= 2
	control := h.Op >= 8 && h.Op <= 10
	valid = rsv == 0 && (data || control && h.Fin && h.Length <= 125)
	return h, valid
}

// FuzzParse checks Parse against reference: it never panics; it refuses
// exactly the bytes that no bytes after them can make a valid header of
// (zeros give the shortest length, so b completed with zeros is valid if
// anything is); it gives the header once it is whole, what it knows of
// it while it is not, and never ok for a strict prefix; and the header it
// gives, written with PutHeader, parses back to the same.
func FuzzParse(f *testing.F) {
	for _, seed := range [][]byte{
		{}, {0x81}, {0x81, 0x05}, {0x02, 0x83, 1, 2, 3, 4}, {0x80, 0xfe, 0x01, 0x00, 1, 2, 3, 4},
		{0x82, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, {0x89, 0x7e, 0, 5}, {0x89, 0xfe, 0x01},
		{0xc1, 0x00}, {0x83, 0x00}, {0x09, 0x00}, {0x88, 0x7f, 0, 0, 0, 0, 0, 0, 0},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h := Header{Fin: true, Op: 0xf, Masked: true, Key: [4]byte{9, 9, 9, 9}, Length: 9, Size: 99} // all overwritten
		ok, err := Parse(b, &h)
		if len(b) == 0 {
			if h != (Header{}) || ok || err != nil {
				t.Fatalf("Parse of nothing = %+v, %v, %v", h, ok, err)
			}
			return
		}
		var whole [MaxHeader]byte
		copy(whole[:], b)
		want, valid := reference(whole[:])
		switch {
		case !valid:
			if err != ErrProtocol {
				t.Fatalf("Parse(% x) = %+v, %v, %v; want ErrProtocol", b, h, ok, err)
			}
			return
		case len(b) >= want.Size:
			if h != want || !ok || err != nil {
				t.Fatalf("Parse(% x) = %+v, %v, %v; want %+v", b, h, ok, err, want)
			}
		default:
			part := Header{Fin: want.Fin, Op: want.Op}
			if len(b) >= 2 {
				part.Masked, part.Size = want.Masked, want.Size
				if want.Masked && len(b) >= want.Size-4 { // all but the key
					part.Length = want.Length
				}
			}
			if h != part || ok || err != nil {
				t.Fatalf("Parse(% x) = %+v, %v, %v; want %+v, not whole yet", b, h, ok, err, part)
			}
			return
		}
		for i := range h.Size {
			var p Header
			if ok, err := Parse(b[:i], &p); ok || err != nil {
				t.Fatalf("Parse of %d bytes of % x = %v, %v; want not whole yet", i, b[:h.Size], ok, err)
			}
		}
		var out [MaxHeader]byte
		n := PutHeader(out[:], h)
		if n != HeaderSize(h.Masked, h.Length) || n > h.Size {
			t.Fatalf("PutHeader(%+v) wrote %d bytes, HeaderSize %d, parsed from %d", h, n, HeaderSize(h.Masked, h.Length), h.Size)
		}
		var back Header
		ok, err = Parse(out[:n], &back)
		want.Size = n
		if back != want || !ok || err != nil {
			t.Fatalf("PutHeader(%+v) wrote % x, which parses as %+v, %v, %v", h, out[:n], back, ok, err)
		}
		if n == h.Size && !bytes.Equal(out[:n], b[:n]) { // the length was in its shortest form
			t.Fatalf("PutHeader(%+v) wrote % x, want % x", h, out[:n], b[:n])
		}
	})
}
