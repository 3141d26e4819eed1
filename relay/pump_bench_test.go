package relay

import (
	"bytes"
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/muster-gg/muster/internal/wsframe"
)

// discardConn is a net.Conn whose writes go nowhere.
type discardConn struct{ net.Conn }

func (discardConn) Write(p []byte) (int, error) { return len(p), nil }
func (discardConn) SetDeadline(time.Time) error { return nil }
func (discardConn) Close() error                { return nil }

// BenchmarkPumpProcess measures a pump passing on what one read gave,
// without the sockets: "client", 64 small masked messages from a client
// (the hot path: every input of every player), with a ping among them;
// "node", 64 unmasked 200-byte messages from a node.
func BenchmarkPumpProcess(b *testing.B) {
	input := []byte(`{"type":"input","data":{"x":1,"y":2}}`)
	client := bytes.Repeat(rawFrame(true, wsframe.OpText, true, input), 32)
	client = append(client, rawFrame(true, wsframe.OpPing, true, []byte("p"))...)
	client = append(client, bytes.Repeat(rawFrame(true, wsframe.OpText, true, input), 32)...)
	for _, bc := range []struct {
		name       string
		fromClient bool
		in         []byte
	}{
		{"client", true, client},
		{"node", false, bytes.Repeat(rawFrame(true, wsframe.OpBinary, false, make([]byte, 200)), 64)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rl := &Relay{cfg: Config{ReadLimit: 32 << 10}, probeTimeout: time.Hour}
			s := &session{rl: rl, pong: make(chan struct{}, 1)}
			s.ctx, s.cancel = context.WithCancel(context.Background())
			defer s.cancel()
			src, dst := &side{conn: discardConn{}, masked: !bc.fromClient}, &side{conn: discardConn{}, masked: bc.fromClient}
			var count atomic.Uint64
			p := newPump(s, src, dst, &count, bc.in)
			defer bufPool.Put(p.bp)
			p.fromClient = bc.fromClient
			b.SetBytes(int64(len(bc.in)))
			b.ReportAllocs()
			for b.Loop() {
				next, err := p.process(p.end)
				if err != nil || next != p.end {
					b.Fatalf("process: %d of %d, %v", next, p.end, err)
				}
			}
		})
	}
}
