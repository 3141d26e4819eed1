package relay

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/muster-gg/muster/internal/testkit/cputime"
	"github.com/muster-gg/muster/internal/wsframe"
)

// rawEchoNode is a node that completes one WebSocket handshake and echoes
// every data frame unmasked, with preallocated buffers, so that a benchmark
// counts only the relay's allocations.
func rawEchoNode(b *testing.B) string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	b.Cleanup(func() { l.Close(); <-done })
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		if acceptUpgrade(c, br) != nil {
			return
		}
		in := make([]byte, wsframe.MaxHeader+64<<10)
		out := make([]byte, wsframe.MaxHeader+64<<10)
		for {
			h, ok := readFrame(br, in)
			if !ok || h.Op == wsframe.OpClose {
				return
			}
			pl := in[h.Size : h.Size+int(h.Length)]
			wsframe.Mask(h.Key, pl)
			n := wsframe.PutHeader(out, wsframe.Header{Fin: true, Op: h.Op, Length: h.Length})
			n += copy(out[n:], pl)
			if _, err := c.Write(out[:n]); err != nil {
				return
			}
		}
	}()
	return l.Addr().String()
}

// readFrame reads one whole frame into buf.
func readFrame(r io.Reader, buf []byte) (h wsframe.Header, _ bool) {
	n := 0
	for {
		ok, err := parseHeader(buf[:n], &h)
		if err != nil {
			return h, false
		}
		if ok {
			if _, err := io.ReadFull(r, buf[n:h.Size+int(h.Length)]); err != nil {
				return h, false
			}
			return h, true
		}
		if _, err := io.ReadFull(r, buf[n:n+1]); err != nil {
			return h, false
		}
		n++
	}
}

// BenchmarkRelayRoundTrip measures one 128-byte binary message relayed to
// a node and its echo relayed back, over loopback TCP, with a client and
// a node that allocate nothing: allocs/op are the relay's per two relayed
// messages.
//
// Its sub-benchmarks compare the relay's ways of reading and writing:
// "loop", the event loop (one epoll instance for every session, recvmsg
// with TCP_INQ, raw system calls); "raw", a goroutine per direction
// waiting in Go's poller, with the same reads and writes; and "conn", the
// connection's own Read and Write. cpu-ns/op is the user and system CPU
// time of the whole test process (client and node included, the same for
// all) per round trip.
func BenchmarkRelayRoundTrip(b *testing.B) {
	for _, bc := range []struct {
		name       string
		loop, conn bool
	}{{"loop", true, false}, {"raw", false, false}, {"conn", false, true}} {
		b.Run(bc.name, func(b *testing.B) {
			testNoInq, testNoRaw = bc.conn, bc.conn
			defer func() { testNoInq, testNoRaw = false, false }()
			benchmarkRelayRoundTrip(b, !bc.loop)
		})
	}
}

func benchmarkRelayRoundTrip(b *testing.B, noLoop bool) {
	node := rawEchoNode(b)
	rl, err := New(Config{NodeID: "a", Secret: testSecret},
		DirectoryFunc(func(string) (string, bool) { return node, true }), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	rl.noLoop = noLoop
	srv := httptest.NewServer(rl.Middleware(http.NotFoundHandler()))
	defer srv.Close()
	defer rl.Close()

	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, strings.Replace(upgradeRequest("/ws?node=b", "play.example.com"), "Cookie: session=s3cret\r\n", "", 1))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		b.Fatalf("handshake: %v %v", resp, err)
	}
	const size = 128
	key := [4]byte{1, 2, 3, 4}
	msg := make([]byte, wsframe.MaxHeader+size)
	n := wsframe.PutHeader(msg, wsframe.Header{Fin: true, Op: wsframe.OpBinary, Masked: true, Key: key, Length: uint64(size)})
	msg = msg[:n+size]
	wsframe.Mask(key, msg[n:])
	echo := make([]byte, wsframe.MaxHeader+size)

	b.ReportAllocs()
	b.SetBytes(2 * size)
	cpu0 := cputime.Process()
	for b.Loop() {
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if h, ok := readFrame(br, echo); !ok || h.Length != size {
			b.Fatalf("echo: %+v %v", h, ok)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/op")
	_, _ = c.Write([]byte{0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe8}) // close 1000
	_, _ = io.Copy(io.Discard, br)
}
