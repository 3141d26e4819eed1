package relay

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// randomMessage is one message of TestRelayRandomMessages.
type randomMessage struct {
	typ    websocket.MessageType
	data   []byte
	pieces []int // frame sizes when written in fragments; nil for one frame
}

// randomBytes and randomText are what messages are cut from.
var randomBytes, randomText = func() ([]byte, []byte) {
	rng := rand.New(rand.NewPCG(1, 2))
	b, t := make([]byte, 1<<20), make([]byte, 1<<20)
	for i := range b {
		b[i] = byte(rng.Uint32())
		t[i] = byte('a' + rng.IntN(26))
	}
	return b, t
}()

func newRandomMessage(rng *rand.Rand, seq int) randomMessage {
	var n int
	switch p := rng.IntN(100); {
	case p < 75:
		n = rng.IntN(257)
	case p < 95:
		n = 256 + rng.IntN(8<<10)
	case p < 99:
		n = 8<<10 + rng.IntN(72<<10)
	default:
		n = 80<<10 + rng.IntN(120<<10)
	}
	m := randomMessage{typ: websocket.MessageBinary}
	if rng.IntN(2) == 0 {
		// Text, never one of the echo node's commands.
		m.typ = websocket.MessageText
		prefix := fmt.Sprintf("m%d:", seq)
		m.data = make([]byte, len(prefix)+n)
		copy(m.data, prefix)
		off := rng.IntN(len(randomText) - n + 1)
		copy(m.data[len(prefix):], randomText[off:off+n])
	} else {
		off := rng.IntN(len(randomBytes) - n + 1)
		m.data = randomBytes[off : off+n]
	}
	if rng.IntN(3) == 0 {
		for left := len(m.data); left > 0; {
			k := 1 + rng.IntN(left)
			m.pieces = append(m.pieces, k)
			left -= k
		}
	}
	return m
}

func (m randomMessage) write(ctx context.Context, c *websocket.Conn) error {
	if m.pieces == nil {
		return c.Write(ctx, m.typ, m.data)
	}
	w, err := c.Writer(ctx, m.typ)
	if err != nil {
		return err
	}
	off := 0
	for _, k := range m.pieces {
		if _, err := w.Write(m.data[off : off+k]); err != nil {
			return err
		}
		off += k
	}
	return w.Close()
}

// randomClose returns a close code that may be sent, and a reason.
func randomClose(rng *rand.Rand) (websocket.StatusCode, string) {
	codes := []websocket.StatusCode{1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014}
	var code websocket.StatusCode
	switch rng.IntN(4) {
	case 0:
		code = codes[rng.IntN(len(codes))]
	case 1:
		return websocket.StatusNoStatusRcvd, ""
	default:
		code = websocket.StatusCode(3000 + rng.IntN(2000))
	}
	reason := make([]byte, rng.IntN(124))
	for i := range reason {
		reason[i] = byte(' ' + rng.IntN(95))
	}
	return code, string(reason)
}

// TestRelayRandomMessages relays 10,000 messages of random sizes (empty to
// 200 kB) and types, some written in fragments of random sizes, over 20
// connections in turn, echoed by the node, with writes running ahead of
// reads; it checks that every message arrives byte for byte with its type,
// and that each connection's close code and reason, random and sent by the
// client or the node, reach the other end. It runs with sessions on the
// event loop, and on their pumps' goroutines.
func TestRelayRandomMessages(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name string
		opts []nodeOpt
	}{{"loop", nil}, {"goroutines", []nodeOpt{withoutLoop()}}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			testRelayRandomMessages(t, mode.opts...)
		})
	}
}

func testRelayRandomMessages(t *testing.T, opts ...nodeOpt) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0x6d75737465))
	a, b := startPair(t, opts...)
	const conns, perConn = 20, 500
	var sent uint64
	for i := range conns {
		c, served := dial(t, a, "/ws?node=b", dialOpts{})
		if served != "b" {
			t.Fatalf("conn %d: served by %q, want b", i, served)
		}
		recv(t, b.seen, "request at b")
		msgs := make([]randomMessage, perConn)
		for j := range msgs {
			msgs[j] = newRandomMessage(rng, j)
			sent += uint64(len(msgs[j].data))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 4*waitFor)
		writeErr := make(chan error, 1)
		go func() {
			for _, m := range msgs {
				if err := m.write(ctx, c); err != nil {
					writeErr <- err
					return
				}
			}
			writeErr <- nil
		}()
		for j, m := range msgs {
			typ, data, err := c.Read(ctx)
			if err != nil {
				cancel()
				t.Fatalf("conn %d message %d: %v", i, j, err)
			}
			if typ != m.typ || !bytes.Equal(data, m.data) {
				cancel()
				t.Fatalf("conn %d message %d: got %v of %d bytes, want %v of %d (fragments %v)", i, j, typ, len(data), m.typ, len(m.data), m.pieces)
			}
		}
		if err := <-writeErr; err != nil {
			cancel()
			t.Fatalf("conn %d: write: %v", i, err)
		}

		code, reason := randomClose(rng)
		if rng.IntN(2) == 0 {
			_ = c.Close(code, reason)
			if got := recv(t, b.ends, "end at b"); got.Code != code || got.Reason != reason {
				t.Errorf("conn %d: client closed with %d %q, b saw %d %q", i, code, reason, got.Code, got.Reason)
			}
		} else {
			cmd := fmt.Sprintf("close %d", code)
			if reason != "" {
				cmd += " " + reason
			}
			if err := c.Write(ctx, websocket.MessageText, []byte(cmd)); err != nil {
				t.Fatal(err)
			}
			if _, err := readUntilError(ctx, c); closeErrorOf(err).Code != code || closeErrorOf(err).Reason != reason {
				t.Errorf("conn %d: b closed with %d %q, client saw %v", i, code, reason, err)
			}
		}
		cancel()
	}
	testrun.WaitFor(t, "no active relayed connection", func() bool { return a.relay.Stats().Active == 0 })
	if st := a.relay.Stats(); st.BytesToNode < sent || st.BytesToClient < sent {
		t.Errorf("stats %+v, want at least %d bytes each way", st, sent)
	}
}
