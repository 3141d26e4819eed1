package room

import (
	"bytes"
	"testing"
	"time"

	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/internal/wsframe"
)

// TestPingFloodWithoutReadingIsCut: a client that floods pings and reads
// nothing (not even the pongs) is cut once what waits for it passes its
// send queue, and the host holds no more of its pongs than that. The event
// loop once queued every pong, whatever the queue: the server's memory grew
// with what the client sent, at the speed of the network.
func TestPingFloodWithoutReadingIsCut(t *testing.T) {
	h, srv := startHost(t, Config{SendQueue: 4})
	tk, err := h.Tickets().Issue("p1")
	if err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, srv.URL, "ticket="+tk)
	rc.write(t, wsframe.OpText, []byte(`{"type":"hello","data":{"mode":"new"}}`))
	testrun.WaitFor(t, "p1 is registered", func() bool { _, ok := h.Client("p1"); return ok })
	batch := bytes.Repeat(clientFrame(true, wsframe.OpPing, [4]byte{}, make([]byte, wsframe.MaxControl)), 512)
	const most = 64 << 20 // well past what the socket buffers of both ends hold
	// Bounds a hung test only: the host cuts the client long before.
	_ = rc.conn.SetWriteDeadline(time.Now().Add(time.Minute))
	for sent := 0; ; sent += len(batch) {
		if sent > most {
			t.Fatalf("the host took %d MiB of pings from a client that reads nothing, and kept it", sent>>20)
		}
		if _, err := rc.conn.Write(batch); err != nil {
			break
		}
	}
	testrun.WaitFor(t, "p1 is let go", func() bool { _, ok := h.Client("p1"); return !ok })
}
