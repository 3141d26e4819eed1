package relay

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"
)

// Tests of what a hostile client, or a broken node, can do to a relay,
// over raw TCP connections so that they can break the rules.

// rawNode registers node id in dir: a listener whose connections are
// served by serve after the WebSocket handshake, and closed when serve
// returns. Everything ends when the test does.
func rawNode(t *testing.T, dir *dirMap, id string, serve func(c net.Conn, br *bufio.Reader)) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				_, err = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
					"Sec-WebSocket-Accept: "+acceptKey(req.Header.Get("Sec-WebSocket-Key"))+"\r\n\r\n")
				if err == nil {
					serve(c, br)
				}
			})
		}
	})
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	dir.set(id, l.Addr().String())
}

// rawClient opens a WebSocket to n at target over a raw TCP connection, and
// returns it with a reader past the handshake response.
func rawClient(t *testing.T, n *testNode, target string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", n.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, upgradeRequest(target, n.addr)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake with %s: %v %v", target, resp, err)
	}
	return c, br
}

// rawFrame returns a frame with payload; a masked one (a client's) has a
// fixed key.
func rawFrame(fin bool, op byte, masked bool, payload []byte) []byte {
	key := [4]byte{0x37, 0xfa, 0x21, 0x3d}
	b := make([]byte, maxHeader+len(payload))
	n := putHeader(b, fin, op, masked, key, int64(len(payload)))
	n += copy(b[n:], payload)
	if masked {
		mask(key, b[n-len(payload):n])
	}
	return b[:n]
}

// writeUntilStuck writes frame to c until a write fails, or has made no
// progress for a while, which here means that nobody down the line reads
// any more (the wait is a cut-off, not a measurement: stopping early only
// leaves more for the relay to pass on before it is stuck too). It
// reports false if the writer never got stuck.
func writeUntilStuck(c net.Conn, frame []byte) bool {
	for range 1 << 16 {
		_ = c.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := c.Write(frame); err != nil {
			return true
		}
	}
	return false
}

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(es)
}

// TestRelayStalledPeerEnds: a peer that stops reading (its TCP window
// stays shut) and a far side that gives up and goes must not hold a
// relayed connection for ever. Without a bound on a write that makes no
// progress, the relay's write to the peer that does not read waits
// forever, nobody reads the side that left, and the session, its two
// goroutines, buffers and sockets outlive both ends until the relay is
// closed.
func TestRelayStalledPeerEnds(t *testing.T) {
	big := make([]byte, 64<<10)
	for _, tc := range []struct {
		name   string
		noLoop bool
		// client: the client stops reading (else the node does)
		client bool
	}{
		{"client stops reading, loop", false, true},
		{"client stops reading, no loop", true, true},
		{"node stops reading, loop", false, false},
		{"node stops reading, no loop", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := &dirMap{}
			opts := []nodeOpt{withStallTimeout(100 * time.Millisecond)}
			if tc.noLoop {
				opts = append(opts, withoutLoop())
			}
			a := startNode(t, "a", dir, opts...)
			nodeDone, release := make(chan struct{}), make(chan struct{})
			rawNode(t, dir, "b", func(c net.Conn, br *bufio.Reader) {
				defer close(nodeDone)
				if tc.client {
					// The node floods the client, which reads nothing,
					// and, stuck, drops the connection.
					if !writeUntilStuck(c, rawFrame(true, opBinary, false, big)) {
						t.Error("the node's writes never got stuck")
					}
					return
				}
				// The node reads nothing, and holds the connection open
				// until the test ends.
				<-release
			})
			var once sync.Once
			t.Cleanup(func() { once.Do(func() { close(release) }) })
			before := openFDs(t)
			c, _ := rawClient(t, a, "/ws?node=b")
			eventually(t, "the session started", func() bool { return a.relay.Stats().Active == 1 })
			if tc.client {
				<-nodeDone // the node gave up and left
			} else {
				// The client floods the node, which reads nothing, and,
				// stuck, drops the connection.
				if !writeUntilStuck(c, rawFrame(true, opBinary, true, big)) {
					t.Fatal("the client's writes never got stuck")
				}
				c.Close()
			}
			eventually(t, "the session ended", func() bool { return a.relay.Stats().Active == 0 })
			c.Close()
			once.Do(func() { close(release) })
			<-nodeDone
			eventually(t, "its descriptors closed", func() bool { return openFDs(t) <= before })
		})
	}
}
