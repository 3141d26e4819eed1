package room

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/internal/wsframe"
)

// TestCloseFrameAnswered: the host answers a client's close frame with
// the client's code, and one that breaks RFC 6455 (a payload of one byte,
// a code never sent on the wire) with 1002, on either path. The event
// loop once echoed whatever came, a close frame no client accepts.
func TestCloseFrameAnswered(t *testing.T) {
	h, srv := startHost(t, Config{})
	cases := []struct {
		name    string
		payload []byte
		want    websocket.StatusCode
	}{
		{"a code", binary.BigEndian.AppendUint16(nil, 4321), 4321},
		{"no code", nil, 0},
		{"one byte", []byte{3}, websocket.StatusProtocolError},
		{"1005", binary.BigEndian.AppendUint16(nil, 1005), websocket.StatusProtocolError},
		{"a code out of range", binary.BigEndian.AppendUint16(nil, 5000), websocket.StatusProtocolError},
	}
	for i, tc := range cases {
		id := string(rune('a' + i))
		tk, err := h.Tickets().Issue(id)
		if err != nil {
			t.Fatal(err)
		}
		rc := dialRaw(t, srv.URL, "ticket="+tk)
		rc.write(t, wsframe.OpText, []byte(`{"type":"hello","data":{"mode":"new"}}`))
		testrun.WaitFor(t, id+" is registered", func() bool { _, ok := h.Client(id); return ok })
		rc.write(t, wsframe.OpClose, tc.payload)
		_ = rc.conn.SetReadDeadline(time.Now().Add(time.Minute)) // bounds a hung test only
		for {
			op, p, err := rc.read()
			if err != nil {
				t.Fatalf("%s: waiting for the answer to the close: %v", tc.name, err)
			}
			if op != wsframe.OpClose {
				continue
			}
			got := websocket.StatusCode(0)
			if len(p) >= 2 {
				got = websocket.StatusCode(binary.BigEndian.Uint16(p))
			}
			if got != tc.want || len(p) == 1 {
				t.Errorf("%s: answered with %q, want the code %d", tc.name, p, tc.want)
			}
			break
		}
		rc.conn.Close()
	}
}
