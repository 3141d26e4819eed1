//go:build linux && (amd64 || arm64)

package relay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"runtime"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/internal/wsframe"
)

// withLoopWaitIn makes every loop of the node wait at where: waitKernel
// or waitPoller.
func withLoopWaitIn(where int) nodeOpt {
	return func(n *nodeSettings) { n.setup = func(rl *Relay) { rl.loops.waitIn = where } }
}

// TestLoopWaitsEitherWay relays random messages with the loop waiting in
// the kernel only and in Go's poller only: by default the traffic decides
// where it waits, and one run of the test may not reach both.
func TestLoopWaitsEitherWay(t *testing.T) {
	t.Parallel()
	for name, where := range map[string]int{"kernel": waitKernel, "poller": waitPoller} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testRelayRandomMessages(t, withLoopWaitIn(where))
		})
	}
}

// TestLendP: a loop that waits in the kernel does so on a P added for it,
// at most one for every two the process had, none in a process with one,
// and a GOMAXPROCS set by someone else meanwhile is left alone.
func TestLendP(t *testing.T) {
	orig := runtime.GOMAXPROCS(0)
	t.Cleanup(func() {
		// A failure must not leave Ps lent to the package's other tests.
		lent.mu.Lock()
		lent.n, lent.off = 0, false
		lent.mu.Unlock()
		runtime.GOMAXPROCS(orig)
	})
	want := func(n int, when string) {
		t.Helper()
		if got := runtime.GOMAXPROCS(0); got != n {
			t.Fatalf("%s: GOMAXPROCS %d, want %d", when, got, n)
		}
	}

	runtime.GOMAXPROCS(1)
	if lendP() {
		t.Fatal("a process with one P lent one")
	}
	want(1, "nothing lent")

	runtime.GOMAXPROCS(4)
	for i := range 2 {
		if !lendP() {
			t.Fatalf("lend %d of 2 with 4 Ps refused", i+1)
		}
	}
	want(6, "two lent")
	if got := procs(); got != 4 {
		t.Fatalf("procs() = %d with two lent, want 4", got)
	}
	if lendP() {
		t.Fatal("a third P lent with 4")
	}
	returnP()
	returnP()
	want(4, "both returned")

	if !lendP() {
		t.Fatal("lend refused after all were returned")
	}
	runtime.GOMAXPROCS(7) // the game's own setting
	if lendP() {
		t.Fatal("a P lent after GOMAXPROCS was set by someone else")
	}
	returnP()
	want(7, "returned after GOMAXPROCS was set by someone else")
	if !lendP() {
		t.Fatal("lend refused once nothing was lent")
	}
	want(8, "lent on the new setting")
	returnP()
	want(7, "returned on the new setting")
}

// TestLoopWaitsOnALentP: with one connection the loop waits in the kernel,
// where its goroutine keeps a P, on a P lent for it: the rest of the
// process keeps the two it had. It gives the P back when it ends.
func TestLoopWaitsOnALentP(t *testing.T) {
	c := relayedOnALentP(t)
	c.Close(websocket.StatusNormalClosure, "")
	testrun.WaitFor(t, "the P given back", func() bool { return runtime.GOMAXPROCS(0) == 2 })
}

// TestLoopLeavesTheKernelWhenGOMAXPROCSIsSet: when the program sets
// GOMAXPROCS while a loop waits in the kernel on a lent P, the loop goes
// back to Go's poller at its next wake-up, so that it does not keep one of
// the program's Ps, and the value the program set is left alone.
func TestLoopLeavesTheKernelWhenGOMAXPROCSIsSet(t *testing.T) {
	c := relayedOnALentP(t)
	runtime.GOMAXPROCS(2) // the program's own setting
	echo(t, c)            // the wake-up at which the loop looks
	if held := heldPs(100, 2); held > 10 {
		t.Errorf("in %d of 100 samples the process had fewer than 2 Ps outside system calls: the loop waits in the kernel on one of the program's", held)
	}
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("GOMAXPROCS %d, want 2 as the program set it", got)
	}
}

// TestLoopAsksForAPAgain: a loop that found no P to lend (the one there
// was is held) asks again later, and waits in the kernel once it gets one.
func TestLoopAsksForAPAgain(t *testing.T) {
	withProcs(t, 2)
	if !lendP() { // what another Relay's loop would hold
		t.Fatal("no P lent with 2")
	}
	held := true
	t.Cleanup(func() {
		if held {
			returnP()
		}
	})
	_, _, c := relayedVia(t)
	echo(t, c)
	returnP()
	held = false
	testrun.WaitFor(t, "a P lent to the loop", func() bool {
		echo(t, c)
		return runtime.GOMAXPROCS(0) == 3
	})
}

// TestAccountComesDown: one event per wake-up brings the moving average
// under perWakeSparse from any height, so a loop goes back to the kernel's
// wait after busy traffic; three bring it over perWakeDense.
func TestAccountComesDown(t *testing.T) {
	l := &loop{perWake: 20 * perWakeOne}
	for range 200 {
		l.account(1)
	}
	if l.perWake >= perWakeSparse {
		t.Errorf("perWake %d after 200 wake-ups of one event, want under %d", l.perWake, perWakeSparse)
	}
	l.perWake = 0
	for range 200 {
		l.account(3)
	}
	if l.perWake < perWakeDense {
		t.Errorf("perWake %d after 200 wake-ups of three events, want at least %d", l.perWake, perWakeDense)
	}
}

// TestPollerStay: a loop that has left the kernel's wait stays in Go's
// poller for pollerStay, however sparse the traffic, so that it does not
// switch (two GOMAXPROCS changes, each stopping the world) at every lull.
func TestPollerStay(t *testing.T) {
	l := &loop{ls: &loops{}}
	l.pollerUntil = time.Now().Add(time.Hour)
	if l.inKernel(false) {
		t.Error("a loop went back to the kernel's wait before its stay in Go's poller ended")
	}
	if !l.inKernel(true) {
		t.Error("the stay sent a loop with sparse traffic out of the kernel's wait")
	}
	l.pollerUntil = time.Now().Add(-time.Nanosecond)
	if !l.inKernel(false) {
		t.Error("a loop with sparse traffic stayed in Go's poller after its stay ended")
	}
}

// relayedOnALentP sets GOMAXPROCS to 2 for the test and returns a client's
// relayed connection once its loop waits in the kernel on a lent P: 3 Ps,
// one goroutine in a system call.
func relayedOnALentP(t *testing.T) *websocket.Conn {
	t.Helper()
	withProcs(t, 2)
	_, _, c := relayedVia(t)
	echo(t, c)
	testrun.WaitFor(t, "the loop in the kernel's wait on a lent P", func() bool {
		return runtime.GOMAXPROCS(0) == 3 && inSyscall() == 1
	})
	return c
}

// withProcs sets GOMAXPROCS to n for the test.
func withProcs(t *testing.T, n int) {
	orig := runtime.GOMAXPROCS(n)
	t.Cleanup(func() { runtime.GOMAXPROCS(orig) })
}

// inSyscall is how many goroutines are in a system call.
func inSyscall() int {
	s := []metrics.Sample{{Name: "/sched/goroutines/not-in-go:goroutines"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// echo sends a message on c and reads the node's echo.
func echo(t *testing.T, c *websocket.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.Read(ctx); err != nil || string(b) != "hello" {
		t.Fatalf("read %q, %v", b, err)
	}
}

// TestLoopWithoutADescriptorToSpare: a loop that is to wait in Go's poller
// but cannot duplicate its epoll instance's descriptor (the process is at
// its limit) neither waits in the kernel on one of the process's Ps nor
// stops relaying.
func TestLoopWithoutADescriptorToSpare(t *testing.T) {
	withProcs(t, 2)
	noDup := func(n *nodeSettings) {
		n.setup = func(rl *Relay) { rl.loops.waitIn, rl.loops.noDup = waitPoller, true }
	}
	testRelayRandomMessages(t, noDup)

	_, _, c := relayedVia(t, noDup)
	echo(t, c)
	// The connection is idle now: sample where the loop waits.
	if held := heldPs(100, 2); held > 10 {
		t.Errorf("in %d of 100 samples the process had fewer than 2 Ps outside system calls: the loop waits in the kernel on one of them", held)
	}
}

// heldPs samples the process n times, 200 µs apart, and returns in how
// many samples fewer than want Ps were outside system calls.
func heldPs(n, want int) int {
	held := 0
	for range n {
		time.Sleep(200 * time.Microsecond) // spreads the samples; not a wait for a condition
		if runtime.GOMAXPROCS(0)-inSyscall() < want {
			held++
		}
	}
	return held
}

// onlySession returns the relay's one session.
func onlySession(t *testing.T, rl *Relay) *session {
	t.Helper()
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if len(rl.sessions) != 1 {
		t.Fatalf("%d sessions, want 1", len(rl.sessions))
	}
	for s := range rl.sessions {
		return s
	}
	return nil
}

// loopOf returns the loop s was put on, and the channel closed when the
// loop handed it back; nil, nil if it never was on one.
func loopOf(s *session) (*loop, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loop, s.offLoop
}

// runningLoops counts the relay's running loops.
func runningLoops(rl *Relay) int {
	rl.loops.mu.Lock()
	defer rl.loops.mu.Unlock()
	n := 0
	for _, l := range rl.loops.slots {
		if l != nil {
			n++
		}
	}
	return n
}

// TestLoopHandsBackAFullPeer: a client that writes without reading fills
// its own socket with the node's echoes. The loop, which must not wait,
// hands the session back to its pumps' goroutines with what it could not
// write, and when the client reads again every message arrives, in order
// and byte for byte, and the session goes on working both ways.
func TestLoopHandsBackAFullPeer(t *testing.T) {
	t.Parallel()
	a, _, c := relayedVia(t)
	s := onlySession(t, a.relay)
	l, off := loopOf(s)
	if l == nil {
		t.Fatal("the session was not put on the loop")
	}
	select {
	case <-off:
		t.Fatal("the session left the loop before any traffic")
	default:
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	msg := func(i int) []byte {
		b := bytes.Repeat([]byte{byte(i)}, 32<<10)
		binary.BigEndian.PutUint32(b, uint32(i))
		return b
	}
	// Write until the loop has handed the session back. Before that the
	// writes cannot stall for good: the node stops reading only when the
	// relay stops reading its echoes, which the loop does only by handing
	// the session back.
	written := make(chan int, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-off:
				written <- i
				return
			default:
			}
			if err := c.Write(ctx, websocket.MessageBinary, msg(i)); err != nil {
				written <- -1
				return
			}
		}
	}()
	recv(t, off, "the session handed back")
	total := -1
	for i := 0; i != total; i++ {
		typ, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if typ != websocket.MessageBinary || !bytes.Equal(b, msg(i)) {
			t.Fatalf("message %d: got %v of %d bytes starting % x, want message %d", i, typ, len(b), b[:min(len(b), 4)], i)
		}
		if total < 0 {
			select {
			case total = <-written:
				if total < 0 {
					t.Fatal("a write failed")
				}
			default:
			}
		}
		if total < 0 && i > 1<<16 {
			t.Fatal("the writer never stopped")
		}
	}
	if total <= 0 {
		t.Fatalf("%d messages written", total)
	}
	t.Logf("handed back after %d messages of 32 kB", total)

	// Off the loop, the session relays as before.
	if err := c.Write(ctx, websocket.MessageText, []byte("after")); err != nil {
		t.Fatal(err)
	}
	if typ, b, err := c.Read(ctx); err != nil || typ != websocket.MessageText || string(b) != "after" {
		t.Fatalf("after the hand-back: %v %q %v", typ, b, err)
	}
	if err := c.Close(websocket.StatusNormalClosure, "done"); err != nil {
		t.Fatal(err)
	}
	testrun.WaitFor(t, "the loop ended", func() bool { return runningLoops(a.relay) == 0 })
}

// TestLoopEndsWithItsLastSession: a loop runs while it has sessions, and
// ends when the last one does; the next session starts one again.
func TestLoopEndsWithItsLastSession(t *testing.T) {
	t.Parallel()
	a, _ := startPair(t)
	for round := range 3 {
		var conns []*websocket.Conn
		for range 4 {
			c, _ := dial(t, a, "/ws?node=b", dialOpts{})
			conns = append(conns, c)
		}
		if n := runningLoops(a.relay); n == 0 {
			t.Fatalf("round %d: no loop runs with 4 sessions", round)
		}
		for i, c := range conns {
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			if err := c.Write(ctx, websocket.MessageText, []byte("hello")); err != nil {
				t.Fatal(err)
			}
			if _, b, err := c.Read(ctx); err != nil || string(b) != "hello" {
				t.Fatalf("round %d conn %d: %q %v", round, i, b, err)
			}
			cancel()
			_ = c.Close(websocket.StatusNormalClosure, "")
		}
		testrun.WaitFor(t, "the loops ended", func() bool { return runningLoops(a.relay) == 0 && a.relay.Stats().Active == 0 })
	}
}

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// fill writes to c until its socket has no room left, and returns how
// many bytes it wrote.
func fill(t *testing.T, c net.Conn) int {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	n := 0
	err = rc.Write(func(fd uintptr) bool {
		for {
			m, err := syscall.Write(int(fd), chunk)
			if err != nil {
				return true // EAGAIN: full
			}
			n += m
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLoopSpilledCloseFrameReachesNode: when the node's socket is full, a
// message and a close frame read together from the client are both kept
// in the spill, and the session handed back; the close frame, which ends
// the client's pump, must still be written to the node after the message,
// and the close handshake completes.
func TestLoopSpilledCloseFrameReachesNode(t *testing.T) {
	t.Parallel()
	rl, err := New(Config{NodeID: "a", Secret: testSecret}, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	upConn, node := tcpPair(t)
	clientConn, client := tcpPair(t)
	filled := fill(t, upConn)

	s := newSession(rl, upConn)
	defer s.cancel()
	if !rl.track(s) || !s.accepted(clientConn) {
		t.Fatal("session refused")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer rl.untrack(s)
		s.run(nil, nil)
	}()
	testrun.WaitFor(t, "the session on the loop", func() bool { l, _ := loopOf(s); return l != nil })

	// A message and a close frame in one write, so that the loop reads
	// them together.
	key := [4]byte{9, 8, 7, 6}
	frame := func(op byte, payload string) []byte {
		b := make([]byte, wsframe.MaxHeader+len(payload))
		n := wsframe.PutHeader(b, wsframe.Header{Fin: true, Op: op, Masked: true, Key: key, Length: uint64(len(payload))})
		n += copy(b[n:], payload)
		wsframe.Mask(key, b[n-len(payload):n])
		return b[:n]
	}
	if _, err := client.Write(append(frame(wsframe.OpBinary, "last words"), frame(wsframe.OpClose, "\x0f\xa0bye")...)); err != nil {
		t.Fatal(err)
	}
	_, off := loopOf(s)
	recv(t, off, "the session handed back")

	// The node reads what filled its socket, then the message and the
	// close frame, and answers the close.
	_ = node.SetDeadline(time.Now().Add(waitFor))
	br := bufio.NewReader(node)
	if _, err := io.CopyN(io.Discard, br, int64(filled)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, wsframe.MaxHeader+wsframe.MaxControl)
	for _, want := range []struct {
		op      byte
		payload string
	}{{wsframe.OpBinary, "last words"}, {wsframe.OpClose, "\x0f\xa0bye"}} {
		h, ok := readFrame(br, buf)
		if !ok {
			t.Fatalf("the node did not get frame %d %q", want.op, want.payload)
		}
		pl := buf[h.Size : h.Size+int(h.Length)]
		wsframe.Mask(h.Key, pl)
		if h.Op != want.op || string(pl) != want.payload {
			t.Fatalf("the node got frame %d %q, want %d %q", h.Op, pl, want.op, want.payload)
		}
	}
	if _, err := node.Write([]byte{0x88, 0x05, 0x0f, 0xa0, 'b', 'y', 'e'}); err != nil {
		t.Fatal(err)
	}
	_ = client.SetDeadline(time.Now().Add(waitFor))
	h, ok := readFrame(bufio.NewReader(client), buf)
	if !ok || h.Op != wsframe.OpClose || string(buf[h.Size:h.Size+int(h.Length)]) != "\x0f\xa0bye" {
		t.Fatalf("the client got %+v %q, want the node's close frame", h, buf[h.Size:h.Size+int(h.Length)])
	}
	_ = node.Close()
	_ = client.Close()
	recv(t, done, "the session to end")
	rl.loops.wait()
}
