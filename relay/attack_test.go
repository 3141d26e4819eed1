package relay

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/internal/wsframe"
)

// Tests of what a hostile client, or a broken node, can do to a relay,
// over raw TCP connections so that they can break the rules.

// rawNode registers node id in dir: a listener whose connections are
// served by serve after the WebSocket handshake, and closed when serve
// returns. Everything ends when the test does.
func rawNode(t *testing.T, dir *dirMap, id string, serve func(c net.Conn, br *bufio.Reader)) {
	t.Helper()
	dir.set(id, acceptAll(t, func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		if acceptUpgrade(c, br) == nil {
			serve(c, br)
		}
	}))
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
	b := make([]byte, wsframe.MaxHeader+len(payload))
	n := wsframe.PutHeader(b, wsframe.Header{Fin: fin, Op: op, Masked: masked, Key: key, Length: uint64(len(payload))})
	n += copy(b[n:], payload)
	if masked {
		wsframe.Mask(key, b[n-len(payload):n])
	}
	return b[:n]
}

// writeUntilStuck writes frame to c until a write fails, or has made no
// progress for a while, which here means that nobody down the line reads
// any more (the wait is a cut-off, not a measurement: stopping early only
// leaves more for the relay to pass on before it is stuck too). It
// reports false if the writer was neither stuck nor stopped within
// waitFor.
func writeUntilStuck(c net.Conn, frame []byte) bool {
	deadline := time.Now().Add(waitFor)
	for time.Now().Before(deadline) {
		_ = c.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := c.Write(frame); err != nil {
			return true
		}
	}
	return false
}

// readUntilClose reads frames of up to size bytes from br, the reader of
// c, until a close frame or an error, then closes c.
func readUntilClose(c net.Conn, br *bufio.Reader, size int) {
	buf := make([]byte, size)
	for {
		if h, ok := readFrame(br, buf); !ok || h.Op == wsframe.OpClose {
			c.Close()
			return
		}
	}
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
					// and, stuck, drops the connection; it also leaves
					// when it reads a close frame.
					var rg sync.WaitGroup
					defer rg.Wait()
					defer c.Close()
					rg.Go(func() { readUntilClose(c, br, wsframe.MaxHeader+64<<10) })
					if !writeUntilStuck(c, rawFrame(true, wsframe.OpBinary, false, big)) {
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
			c, br := rawClient(t, a, "/ws?node=b")
			testrun.WaitFor(t, "the session started", func() bool { return a.relay.Stats().Active == 1 })
			if tc.client {
				<-nodeDone // the node gave up and left
			} else {
				// The client floods the node, which reads nothing, and,
				// stuck, drops the connection; it also leaves when it
				// reads a close frame.
				var rg sync.WaitGroup
				defer rg.Wait()
				defer c.Close()
				rg.Go(func() { readUntilClose(c, br, wsframe.MaxHeader+wsframe.MaxControl) })
				if !writeUntilStuck(c, rawFrame(true, wsframe.OpBinary, true, big)) {
					t.Fatal("the client's writes never got stuck")
				}
				c.Close()
			}
			testrun.WaitFor(t, "the session ended", func() bool { return a.relay.Stats().Active == 0 })
			c.Close()
			once.Do(func() { close(release) })
			<-nodeDone
			testrun.WaitFor(t, "its descriptors closed", func() bool { return openFDs(t) <= before })
		})
	}
}

// TestRelayHostileSessionsDoNotStarveOthers runs, on one relay, sessions
// whose clients flood messages and read nothing, flood pings and read
// nothing (so the pongs cannot be written), and send a frame one byte at a
// time, while another client exchanges messages: sessions share the event
// loop, and none of these may stall it.
func TestRelayHostileSessionsDoNotStarveOthers(t *testing.T) {
	onLoopAndOff(t, func(t *testing.T, dir *dirMap, a *testNode) {
		startNode(t, "b", dir)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		defer wg.Wait()
		defer close(stop)
		hostile := func(frames func(i int) []byte, pause time.Duration) {
			c, _ := rawClient(t, a, "/ws?node=b")
			wg.Go(func() {
				defer func() {
					// End with a FIN, and read what is left, so
					// that the relay sees the end at once (a reset
					// that comes in with the last data may be seen
					// only at the node's next message; see copyInq).
					_ = c.(*net.TCPConn).CloseWrite()
					_ = c.SetReadDeadline(time.Now().Add(waitFor))
					_, _ = io.Copy(io.Discard, c)
					c.Close()
				}()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					_ = c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
					if _, err := c.Write(frames(i)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
						return
					}
					if pause > 0 {
						time.Sleep(pause)
					}
				}
			})
		}
		big := rawFrame(true, wsframe.OpBinary, true, make([]byte, 64<<10))
		ping := rawFrame(true, wsframe.OpPing, true, make([]byte, wsframe.MaxControl))
		pings := bytes.Repeat(ping, 500)
		slow := rawFrame(true, wsframe.OpText, true, []byte("one byte at a time"))
		hostile(func(int) []byte { return big }, 0)
		hostile(func(int) []byte { return pings }, 0)
		hostile(func(i int) []byte { return slow[i%len(slow) : i%len(slow)+1] }, time.Millisecond)

		c, _ := dial(t, a, "/ws?node=b", dialOpts{})
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		for i := range 200 {
			msg := fmt.Appendf(nil, "message %d", i)
			if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
			if _, b, err := c.Read(ctx); err != nil || !bytes.Equal(b, msg) {
				t.Fatalf("echo %d: %q, %v", i, b, err)
			}
		}
		_ = c.Close(websocket.StatusNormalClosure, "")
	})
}

// reset closes c with a reset (RST) instead of a FIN, as a client that
// crashes or a middlebox that drops it does.
func reset(t *testing.T, c net.Conn) {
	t.Helper()
	if err := c.(*net.TCPConn).SetLinger(0); err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// TestRelayClientResetWhileFlooding: a client floods the node, reads none
// of the echoes, and, when everything is stuck (the relay writing to the
// node, the node writing its echoes to the relay, the relay writing them
// to the client), resets its connection. The node must learn at once that
// the client went away (1001), and the session end. Closing the client's
// connection, after the write to it failed, waited for the other
// direction's write to the node, which was made inside the read of the
// client's connection; that write waited for the node, and the node for
// the direction that was closing: nothing moved until a deadline passed.
func TestRelayClientResetWhileFlooding(t *testing.T) {
	onLoopAndOff(t, func(t *testing.T, dir *dirMap, a *testNode) {
		b := startNode(t, "b", dir)
		c, _ := rawClient(t, a, "/ws?node=b")
		recv(t, b.seen, "request at b")
		if !writeUntilStuck(c, rawFrame(true, wsframe.OpBinary, true, make([]byte, 64<<10))) {
			t.Fatal("the client's writes never got stuck")
		}
		reset(t, c)
		if got := recv(t, b.ends, "end at b"); got.Code != websocket.StatusGoingAway {
			t.Errorf("b saw %d %q, want 1001", got.Code, got.Reason)
		}
		testrun.WaitFor(t, "the session ended", func() bool { return a.relay.Stats().Active == 0 })
	})
}

// TestRelayClientResetWhilePonged: a client floods pings, reads none of
// the pongs, and resets its connection while the relay waits to write
// one. The pong's failed write is the client's end, which the node must
// see as a going away (1001), not as its own connection dropped (1006).
func TestRelayClientResetWhilePonged(t *testing.T) {
	onLoopAndOff(t, func(t *testing.T, dir *dirMap, a *testNode) {
		b := startNode(t, "b", dir)
		c, _ := rawClient(t, a, "/ws?node=b")
		recv(t, b.seen, "request at b")
		if !writeUntilStuck(c, bytes.Repeat(rawFrame(true, wsframe.OpPing, true, make([]byte, wsframe.MaxControl)), 500)) {
			t.Fatal("the client's writes never got stuck")
		}
		reset(t, c)
		if got := recv(t, b.ends, "end at b"); got.Code != websocket.StatusGoingAway {
			t.Errorf("b saw %d %q, want 1001", got.Code, got.Reason)
		}
		testrun.WaitFor(t, "the session ended", func() bool { return a.relay.Stats().Active == 0 })
	})
}

// closeCode reads frames from br until a close frame, and returns its
// status code, or 0 when the connection ended first.
func closeCode(t *testing.T, c net.Conn, br *bufio.Reader) int {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(waitFor)) // a failure deadline
	buf := make([]byte, wsframe.MaxHeader+64<<10)
	for {
		h, ok := readFrame(br, buf)
		if !ok {
			return 0
		}
		if h.Op == wsframe.OpClose {
			pl := buf[h.Size : h.Size+int(h.Length)]
			wsframe.Mask(h.Key, pl)
			if len(pl) < 2 {
				return 1005
			}
			return int(pl[0])<<8 | int(pl[1])
		}
	}
}

// TestRelayRefusesBrokenFrames sends frames that break RFC 6455 through a
// relay, from the client and from the node, and checks that the sender
// is closed with 1002 (protocol error), or 1009 for a message above the
// read limit, the other side with 1001, and that nothing is left.
func TestRelayRefusesBrokenFrames(t *testing.T) {
	text := func(fin bool, payload string, masked bool) []byte {
		return rawFrame(fin, wsframe.OpText, masked, []byte(payload))
	}
	withBits := func(b []byte, bits byte) []byte { b[0] |= bits; return b }
	cases := []struct {
		name   string
		frames func(masked bool) []byte
		code   int
	}{
		{"reserved bit", func(m bool) []byte { return withBits(text(true, "x", m), 0x40) }, 1002},
		{"unknown opcode", func(m bool) []byte { return rawFrame(true, 0x3, m, []byte("x")) }, 1002},
		{"unknown control opcode", func(m bool) []byte { return rawFrame(true, 0xb, m, nil) }, 1002},
		{"wrong masking", func(m bool) []byte { return text(true, "x", !m) }, 1002},
		{"continuation first", func(m bool) []byte { return rawFrame(true, wsframe.OpContinuation, m, []byte("x")) }, 1002},
		{"new message inside one", func(m bool) []byte { return append(text(false, "a", m), text(true, "b", m)...) }, 1002},
		{"long ping", func(m bool) []byte { return rawFrame(true, wsframe.OpPing, m, make([]byte, 126)) }, 1002},
		{"fragmented ping", func(m bool) []byte { return rawFrame(false, wsframe.OpPing, m, nil) }, 1002},
		{"close with one byte", func(m bool) []byte { return rawFrame(true, wsframe.OpClose, m, []byte{3}) }, 1002},
		{"close with 1005", func(m bool) []byte { return rawFrame(true, wsframe.OpClose, m, []byte{0x03, 0xed}) }, 1002},
		{"close with 999", func(m bool) []byte { return rawFrame(true, wsframe.OpClose, m, []byte{0x03, 0xe7}) }, 1002},
		{"close with 2000", func(m bool) []byte { return rawFrame(true, wsframe.OpClose, m, []byte{0x07, 0xd0}) }, 1002},
		{"close reason not UTF-8", func(m bool) []byte { return rawFrame(true, wsframe.OpClose, m, []byte{0x03, 0xe8, 0xff, 0xfe}) }, 1002},
		{"length above 2^63", func(m bool) []byte {
			return []byte{0x82, 0x7f, 0x80, 0, 0, 0, 0, 0, 0, 1}
		}, 1002},
		{"fragments above the limit", func(m bool) []byte {
			var b []byte
			b = append(b, rawFrame(false, wsframe.OpBinary, m, make([]byte, 600))...)
			return append(b, rawFrame(true, wsframe.OpContinuation, m, make([]byte, 600))...)
		}, 1009},
	}
	for _, noLoop := range []bool{false, true} {
		for _, fromNode := range []bool{false, true} {
			for _, tc := range cases {
				name := fmt.Sprintf("%s/from node %v/no loop %v", tc.name, fromNode, noLoop)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					dir := &dirMap{}
					opts := []nodeOpt{withReadLimit(1000)}
					if noLoop {
						opts = append(opts, withoutLoop())
					}
					a := startNode(t, "a", dir, opts...)
					if !fromNode {
						b := startNode(t, "b", dir)
						c, br := rawClient(t, a, "/ws?node=b")
						recv(t, b.seen, "request at b")
						if _, err := c.Write(tc.frames(true)); err != nil {
							t.Fatal(err)
						}
						if got := closeCode(t, c, br); got != tc.code {
							t.Errorf("the client was closed with %d, want %d", got, tc.code)
						}
						c.Close()
						if got := recv(t, b.ends, "end at b"); got.Code != websocket.StatusGoingAway {
							t.Errorf("b saw %d %q, want 1001", got.Code, got.Reason)
						}
					} else {
						codes := make(chan int, 1)
						rawNode(t, dir, "b", func(c net.Conn, br *bufio.Reader) {
							if _, err := c.Write(tc.frames(false)); err != nil {
								codes <- -1
								return
							}
							codes <- closeCode(t, c, br)
						})
						c, br := rawClient(t, a, "/ws?node=b")
						if got := recv(t, codes, "the node's close code"); got != tc.code {
							t.Errorf("the node was closed with %d, want %d", got, tc.code)
						}
						if got := closeCode(t, c, br); got != 1001 {
							t.Errorf("the client was closed with %d, want 1001", got)
						}
						c.Close()
					}
					testrun.WaitFor(t, "the session ended", func() bool { return a.relay.Stats().Active == 0 })
				})
			}
		}
	}
}

// TestRelayClientEndsMidFrame: a client whose connection ends (with a FIN
// or a reset) in the middle of a frame header, of a short frame, of a long
// frame passed on in pieces, or between the frames of a message, is
// reported to the node as gone (1001), and the session ends. A pump off
// the loop may not see a reset that came in with the last data (see
// copyInq): the node's next ping or message finds it
// (TestRelayNodePingFindsResetClient), so resets are tried here on the
// loop only, which sees them in the event's flags.
func TestRelayClientEndsMidFrame(t *testing.T) {
	long := rawFrame(true, wsframe.OpBinary, true, make([]byte, 1<<20))
	states := []struct {
		name string
		sent []byte
	}{
		{"in a header", rawFrame(true, wsframe.OpText, true, []byte("hello"))[:3]},
		{"in a short frame", rawFrame(true, wsframe.OpText, true, []byte("hello"))[:8]},
		{"in a long frame", long[:200<<10]},
		{"between fragments", rawFrame(false, wsframe.OpText, true, []byte("part one"))},
	}
	for _, noLoop := range []bool{false, true} {
		for _, rst := range []bool{false, true} {
			for _, st := range states {
				if rst && noLoop {
					continue
				}
				name := fmt.Sprintf("%s/reset %v/no loop %v", st.name, rst, noLoop)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					dir := &dirMap{}
					var opts []nodeOpt
					if noLoop {
						opts = append(opts, withoutLoop())
					}
					a := startNode(t, "a", dir, opts...)
					b := startNode(t, "b", dir)
					c, _ := rawClient(t, a, "/ws?node=b")
					recv(t, b.seen, "request at b")
					if _, err := c.Write(st.sent); err != nil {
						t.Fatal(err)
					}
					if rst {
						reset(t, c)
					} else if err := c.(*net.TCPConn).CloseWrite(); err != nil {
						t.Fatal(err)
					}
					if got := recv(t, b.ends, "end at b"); got.Code != websocket.StatusGoingAway {
						t.Errorf("b saw %d %q, want 1001", got.Code, got.Reason)
					}
					c.Close()
					testrun.WaitFor(t, "the session ended", func() bool { return a.relay.Stats().Active == 0 })
				})
			}
		}
	}
}

// TestRelayNodePingFindsResetClient: a client sends part of a message and
// resets its connection. The reset can come in with the data, before the
// pump reads them, and then neither TCP_INQ (which counts a FIN, not a
// reset) nor the poller (whose one edge the data took) tells the pump,
// which waits on. The node's ping must then find the client gone: the
// relay's ping to the client fails, and the node is sent 1001 at once,
// not when the probe's timeout (here longer than the test's wait) ends.
func TestRelayNodePingFindsResetClient(t *testing.T) {
	onLoopAndOff(t, func(t *testing.T, dir *dirMap, a *testNode) {
		gone := make(chan struct{})
		codes := make(chan int, 1)
		rawNode(t, dir, "b", func(c net.Conn, br *bufio.Reader) {
			<-gone
			if _, err := c.Write(rawFrame(true, wsframe.OpPing, false, []byte("are you there"))); err != nil {
				codes <- -1
				return
			}
			codes <- closeCode(t, c, br)
		})
		// A few times over, as the reset is not always read with the
		// data.
		for range 5 {
			c, _ := rawClient(t, a, "/ws?node=b")
			if _, err := c.Write(rawFrame(false, wsframe.OpText, true, []byte("part one"))); err != nil {
				t.Fatal(err)
			}
			reset(t, c)
			gone <- struct{}{}
			if got := recv(t, codes, "the node's close code"); got != 1001 {
				t.Fatalf("the node was closed with %d, want 1001", got)
			}
			testrun.WaitFor(t, "the session ended", func() bool { return a.relay.Stats().Active == 0 })
		}
	})
}

// onLoopAndOff runs f twice, as subtests: with relaying server a (in dir)
// relaying on its event loop, and on its pumps' goroutines only.
func onLoopAndOff(t *testing.T, f func(t *testing.T, dir *dirMap, a *testNode)) {
	for _, noLoop := range []bool{false, true} {
		t.Run(map[bool]string{false: "loop", true: "no loop"}[noLoop], func(t *testing.T) {
			dir := &dirMap{}
			var opts []nodeOpt
			if noLoop {
				opts = append(opts, withoutLoop())
			}
			f(t, dir, startNode(t, "a", dir, opts...))
		})
	}
}
