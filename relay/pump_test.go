package relay

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/muster-gg/muster/internal/wsframe"
)

// scriptConn is a net.Conn that reads data in pieces of the sizes given
// and records what is written to it.
type scriptConn struct {
	net.Conn // nil: the methods a pump does not use
	data     []byte
	sizes    []byte
	mu       sync.Mutex
	written  bytes.Buffer
}

func (c *scriptConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, net.ErrClosed
	}
	n := 1 + int(c.sizes[0])*64 + int(c.sizes[0]&7)
	// Rotated in a copy: appending to c.sizes[1:] would write into the
	// spare capacity of the fuzzer's input.
	c.sizes = append(c.sizes[1:len(c.sizes):len(c.sizes)], c.sizes[0])
	n = copy(p, c.data[:min(n, len(c.data))])
	c.data = c.data[n:]
	return n, nil
}

func (c *scriptConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.written.Write(p)
}

func (c *scriptConn) SetDeadline(time.Time) error { return nil }
func (c *scriptConn) Close() error                { return nil }

// framePayloads walks the frames of b: data payloads (unmasked), whole
// frames only in complete, every byte that has come in all; it stops at a
// close frame, a frame the pump must refuse, or the end of b.
func framePayloads(b []byte, fromClient bool, limit int64) (complete, all []byte) {
	inMessage, messageLen := false, int64(0)
	var h wsframe.Header
	for len(b) > 0 {
		ok, err := parseHeader(b, &h)
		if err != nil || !ok || h.Masked != fromClient || h.Op == wsframe.OpClose {
			return
		}
		if h.Op > wsframe.OpClose { // ping or pong: answered, not passed on
			if int64(len(b)) < int64(h.Size)+int64(h.Length) {
				return
			}
			b = b[h.Size+int(h.Length):]
			continue
		}
		if (h.Op == wsframe.OpContinuation) != inMessage || limit >= 0 && messageLen+int64(h.Length) > limit {
			return
		}
		messageLen += int64(h.Length)
		inMessage = !h.Fin
		if h.Fin {
			messageLen = 0
		}
		pl := b[h.Size:min(len(b), h.Size+int(h.Length))]
		pl = append([]byte(nil), pl...)
		wsframe.Mask(h.Key, pl) // with a zero key when unmasked
		all = append(all, pl...)
		if uint64(len(pl)) < h.Length {
			return
		}
		complete = append(complete, pl...)
		b = b[h.Size+int(h.Length):]
	}
	return
}

// FuzzPump passes arbitrary bytes, read in arbitrary pieces, through one
// direction of a session and checks what comes out: whole frames only,
// masked as the far side needs, messages correctly fragmented, ending
// with one close frame; the data passed on is the input's, every whole
// frame of it, and nothing it does not hold.
func FuzzPump(f *testing.F) {
	masked := func(op byte, fin bool, payload string) []byte {
		key := [4]byte{9, 8, 7, 6}
		b := make([]byte, wsframe.MaxHeader+len(payload))
		n := wsframe.PutHeader(b, wsframe.Header{Fin: fin, Op: op, Masked: true, Key: key, Length: uint64(len(payload))})
		n += copy(b[n:], payload)
		wsframe.Mask(key, b[n-len(payload):n])
		return b[:n]
	}
	plain := func(op byte, fin bool, payload string) []byte {
		b := make([]byte, wsframe.MaxHeader+len(payload))
		n := wsframe.PutHeader(b, wsframe.Header{Fin: fin, Op: op, Length: uint64(len(payload))})
		return append(b[:n], payload...)
	}
	long := string(bytes.Repeat([]byte("x"), chunk+300))
	f.Add(bytes.Join([][]byte{masked(wsframe.OpText, true, "hello"), masked(wsframe.OpPing, true, "p"), masked(wsframe.OpBinary, false, "ab"), masked(wsframe.OpContinuation, true, "cd"), masked(wsframe.OpClose, true, "\x03\xe8bye")}, nil), []byte{0, 3, 200}, true, int64(-1))
	f.Add(bytes.Join([][]byte{plain(wsframe.OpBinary, true, long), plain(wsframe.OpText, true, "x")}, nil), []byte{255, 17, 40}, false, int64(-1))
	f.Add(masked(wsframe.OpBinary, true, long)[:chunk/2], []byte{255}, true, int64(1<<20))
	f.Add(masked(wsframe.OpBinary, true, "toolong"), []byte{0}, true, int64(3))
	f.Add(plain(wsframe.OpText, true, "unmasked from a client"), []byte{1}, true, int64(-1))
	f.Add([]byte{0x81, 0x7f, 0xff, 0, 0, 0, 0, 0, 0, 1}, []byte{2}, false, int64(-1))
	f.Add([]byte{0x82, 0x7f, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2}, []byte{2}, false, int64(-1))
	f.Add([]byte{0x82, 0x7f, 0, 4, 0, 0, 0, 0, 0, 0, 1, 2}, []byte{2}, false, int64(-1))
	f.Fuzz(func(t *testing.T, data, sizes []byte, fromClient bool, limit int64) {
		if len(sizes) == 0 {
			sizes = []byte{0}
		}
		if limit < -1 {
			limit = -1
		}
		rl := &Relay{cfg: Config{ReadLimit: limit}, probeTimeout: time.Hour}
		src := &scriptConn{data: data, sizes: sizes}
		dst := &scriptConn{}
		s := &session{rl: rl, pong: make(chan struct{}, 1)}
		s.ctx, s.cancel = context.WithCancel(context.Background())
		srcSide, dstSide := &side{conn: src, masked: !fromClient}, &side{conn: dst, masked: fromClient}
		if fromClient {
			s.client, s.up = srcSide, dstSide
		} else {
			s.client, s.up = dstSide, srcSide
		}
		p := newPump(s, srcSide, dstSide, &rl.bytesToNode, nil)
		p.fromClient = fromClient
		p.run()
		s.cancel()
		s.wg.Wait()

		wantComplete, wantAll := framePayloads(data, fromClient, limit)
		out := dst.written.Bytes()
		var got []byte
		inMessage, closed := false, false
		for len(out) > 0 {
			if closed {
				t.Fatalf("%d bytes after the close frame", len(out))
			}
			var h wsframe.Header
			ok, err := parseHeader(out, &h)
			if err != nil || !ok || int64(len(out)) < int64(h.Size)+int64(h.Length) {
				t.Fatalf("output ends in a broken frame: % x", out[:min(len(out), 16)])
			}
			if h.Masked != fromClient {
				t.Fatalf("output frame masked %v, want %v", h.Masked, fromClient)
			}
			pl := append([]byte(nil), out[h.Size:h.Size+int(h.Length)]...)
			wsframe.Mask(h.Key, pl)
			switch h.Op {
			case wsframe.OpClose:
				closed = true
			case wsframe.OpPing, wsframe.OpPong:
			default:
				if (h.Op == wsframe.OpContinuation) != inMessage {
					t.Fatalf("output frame op %d with a message in progress %v", h.Op, inMessage)
				}
				inMessage = !h.Fin
				got = append(got, pl...)
			}
			out = out[h.Size+int(h.Length):]
		}
		if !closed {
			t.Fatal("no close frame at the end of the output")
		}
		if !bytes.HasPrefix(got, wantComplete) || !bytes.HasPrefix(wantAll, got) {
			t.Fatalf("passed on %d payload bytes; the input has %d in whole frames, %d in all", len(got), len(wantComplete), len(wantAll))
		}
		if n := rl.bytesToNode.Load(); n != uint64(len(got)) {
			t.Fatalf("counted %d bytes, passed on %d", n, len(got))
		}
	})
}
