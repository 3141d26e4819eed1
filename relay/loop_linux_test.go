//go:build linux && (amd64 || arm64)

package relay

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/coder/websocket"
)

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
	dir := &dirMap{}
	a := startNode(t, "a", dir)
	startNode(t, "b", dir)
	c, _ := dial(t, a, "/ws?node=b", dialOpts{})
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
	eventually(t, "the loop ended", func() bool { return runningLoops(a.relay) == 0 })
}

// TestLoopEndsWithItsLastSession: a loop runs while it has sessions, and
// ends when the last one does; the next session starts one again.
func TestLoopEndsWithItsLastSession(t *testing.T) {
	t.Parallel()
	dir := &dirMap{}
	a := startNode(t, "a", dir)
	startNode(t, "b", dir)
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
		eventually(t, "the loops ended", func() bool { return runningLoops(a.relay) == 0 && a.relay.Stats().Active == 0 })
	}
}
