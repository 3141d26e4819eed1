//go:build linux

package room

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/internal/wsframe"
)

// blocker is a module whose "slow" messages wait until release is
// closed, as a module waiting for the backplane does; it counts those it
// handled.
type blocker struct {
	release chan struct{}
	handled atomic.Int64
}

func (b *blocker) Attach(ModuleHost) error { return nil }

func (b *blocker) MessageTypes() []string { return []string{"slow"} }

func (b *blocker) HandleMessage(context.Context, *Client, string, []byte) error {
	<-b.release
	b.handled.Add(1)
	return nil
}

// TestSlowModuleHoldsBackTheClientsMessages: while a module handles a
// client's message, the loop holds at most a bounded amount of the
// client's next messages, and leaves the rest in the socket (the client's
// writes wait, as on the portable path, whose reader reads nothing while
// the module works); once the module is done every message is handled.
// The loop once read on and queued all the client sent, however much.
func TestSlowModuleHoldsBackTheClientsMessages(t *testing.T) {
	skipPortable(t)
	b := &blocker{release: make(chan struct{})}
	h := newHost(t, newCounter(), Config{Limits: Limits{Messages: 1 << 20, Burst: 1 << 20}})
	if err := h.Use(b); err != nil {
		t.Fatal(err)
	}
	runHost(t, h)
	var once sync.Once
	free := func() { once.Do(func() { close(b.release) }) }
	t.Cleanup(free) // before the host stops: its session waits for the module
	srv := newServer(t, h)
	rc := helloOnLoop(t, h, srv.URL, "p1", "new")
	c, _ := h.Client("p1")
	lc := c.lc.Load()
	msg := clientFrame(true, wsframe.OpText, [4]byte{}, []byte(`{"type":"slow","data":"`+strings.Repeat("x", 16<<10)+`"}`))
	const most = 64 << 20 // well past what the socket buffers of both ends hold
	sent := 0
	var rest []byte // what a write cut short by its deadline left of its message
	for sent*len(msg) < most {
		// The deadline ends the writes once the host takes no more; a
		// host slow to read ends them early, which the bound below holds for too.
		_ = rc.conn.SetWriteDeadline(time.Now().Add(time.Second))
		n, err := rc.conn.Write(msg)
		if err != nil {
			if n > 0 {
				rest = msg[n:]
			}
			break
		}
		sent++
	}
	lc.wmu.Lock()
	held := 0
	for _, m := range lc.inbox {
		held += len(m.body)
	}
	lc.wmu.Unlock()
	// What the loop may hold (max(ReadLimit, 64 KiB)), and what one read
	// of its buffer adds past it, with the frame that read completes.
	if bound := max(int(h.cfg.ReadLimit), 64<<10) + len(lc.l.buf) + int(h.cfg.ReadLimit); held > bound {
		t.Fatalf("the loop holds %d KiB of messages the module has not taken (bound %d KiB); the client sent %d KiB",
			held>>10, bound>>10, sent*len(msg)>>10)
	}
	free()
	_ = rc.conn.SetWriteDeadline(time.Time{})
	if rest != nil {
		if _, err := rc.conn.Write(rest); err != nil {
			t.Fatal(err)
		}
		sent++
	}
	testrun.WaitFor(t, "every message is handled", func() bool { return b.handled.Load() == int64(sent) })
}
