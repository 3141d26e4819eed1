package room

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/internal/wsframe"
)

// TestFloodingClientDoesNotStarveOthers: a client that sends as fast as
// the network goes (pings, which no message limit counts, while it reads
// its pongs) does not keep the host from serving another client. The
// event loop once read a socket until it found it empty, and a client
// that kept its socket full kept the loop to itself: no other player's
// inputs, pings or closes were served while it sent.
func TestFloodingClientDoesNotStarveOthers(t *testing.T) {
	h, srv := startHost(t, Config{})
	dial := func(id string) *rawClient {
		tk, err := h.Tickets().Issue(id)
		if err != nil {
			t.Fatal(err)
		}
		rc := dialRaw(t, srv.URL, "ticket="+tk)
		rc.write(t, wsframe.OpText, []byte(`{"type":"hello","data":{"mode":"new"}}`))
		testrun.WaitFor(t, id+" is registered", func() bool { _, ok := h.Client(id); return ok })
		return rc
	}
	flooder, other := dial("flooder"), dial("other")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(stop)
		flooder.conn.Close() // ends the reads and a write under way
		wg.Wait()
	})
	batch := bytes.Repeat(clientFrame(true, wsframe.OpPing, [4]byte{}, make([]byte, wsframe.MaxControl)), 512)
	var flooded atomic.Int64
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := flooder.conn.Write(batch); err != nil {
				return
			}
			flooded.Add(int64(len(batch)))
		}
	})
	wg.Go(func() {
		for {
			if _, _, err := flooder.read(); err != nil {
				return
			}
		}
	})
	testrun.WaitFor(t, "the flood is under way", func() bool { return flooded.Load() > 4<<20 })

	var answered atomic.Bool
	wg.Go(func() {
		for {
			op, p, err := other.read()
			if err != nil {
				return
			}
			if op == wsframe.OpPong && string(p) == "other" {
				answered.Store(true)
				return
			}
		}
	})
	other.write(t, wsframe.OpPing, []byte("other"))
	testrun.WaitFor(t, "the other client's ping is answered during the flood", answered.Load)
	other.conn.Close()
}
