package room

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawClient is a WebSocket client that answers pings only when told to,
// so that a test can hold a pong back while it reads every data frame.
type rawClient struct {
	conn net.Conn
	br   *bufio.Reader
}

func dialRaw(t *testing.T, base, query string) *rawClient {
	t.Helper()
	return dialRawWith(t, &net.Dialer{}, base, query)
}

// dialRawWith is dialRaw through d.
func dialRawWith(t *testing.T, d *net.Dialer, base, query string) *rawClient {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	d.Timeout = 5 * time.Second
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET /play?%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", query, addr)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %s", resp.Status)
	}
	return &rawClient{conn: conn, br: br}
}

// write sends one masked frame (the mask key is zero) with a short
// payload.
func (rc *rawClient) write(t *testing.T, op byte, payload []byte) {
	t.Helper()
	if len(payload) > 125 {
		t.Fatal("rawClient writes short frames only")
	}
	frame := append([]byte{0x80 | op, 0x80 | byte(len(payload)), 0, 0, 0, 0}, payload...)
	if _, err := rc.conn.Write(frame); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// read returns the next frame's opcode and payload.
func (rc *rawClient) read() (byte, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(rc.br, h[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(rc.br, b[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(rc.br, b[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	p := make([]byte, n)
	_, err := io.ReadFull(rc.br, p)
	return h[0] & 0x0f, p, err
}

// TestLatePongDoesNotStallSends: while the host waits for a client's
// answer to its ping, it goes on writing the client's frames. A client
// that reads everything but whose pong comes back later than its send
// queue lasts (a round trip of seconds on a starved machine or a bad
// network) is neither cut as too slow nor left without its frames; it was
// cut with 4006 in the soak suite beside a CPU hog, when the writer waited
// for the pong before writing anything else.
func TestLatePongDoesNotStallSends(t *testing.T) {
	h, srv := startHost(t, Config{SendQueue: 2, PingInterval: 2 * time.Second})
	tk, _ := h.Tickets().Issue("late")
	rc := dialRaw(t, srv.URL, "ticket="+tk)
	rc.write(t, 0x1, []byte(`{"type":"hello","data":{"mode":"new"}}`))
	rc.conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // bounds a hung test only

	// Read until the host pings; hold the pong back.
	var ping []byte
	for ping == nil {
		op, p, err := rc.read()
		if err != nil {
			t.Fatalf("waiting for the host's ping: %v", err)
		}
		if op == 0x9 {
			ping = p
		}
	}
	c, ok := h.Client("late")
	if !ok {
		t.Fatal("client not registered")
	}
	// Three queues' worth of frames, each sent once the one before has
	// arrived: the client keeps up with its frames, only its pong is late.
	for i := range 3 * 2 {
		want := fmt.Sprintf(`{"n":%d}`, i)
		if err := c.Send(json.RawMessage(want)); err != nil {
			t.Fatal(err)
		}
		for {
			op, p, err := rc.read()
			if err != nil {
				select {
				case <-c.Done():
				case <-time.After(5 * time.Second):
				}
				c.mu.Lock()
				code, reason := c.closeCode, c.closeReason
				c.mu.Unlock()
				t.Fatalf("frame %d of %d never arrived while the pong was outstanding (%v); the host closed the client with %d %q", i+1, 3*2, err, code, reason)
			}
			if op == 0x1 && string(p) == want {
				break
			}
		}
	}
	// The pong, late, and the client is still served.
	rc.write(t, 0xa, ping)
	if err := c.Send(json.RawMessage(`{"n":"after"}`)); err != nil {
		t.Fatal(err)
	}
	for {
		op, p, err := rc.read()
		if err != nil {
			t.Fatalf("after the late pong: %v", err)
		}
		if op == 0x1 && string(p) == `{"n":"after"}` {
			break
		}
		if op == 0x8 {
			t.Fatalf("closed after the late pong: %q", p)
		}
	}
	if isDone(c) {
		t.Fatal("the client was closed")
	}
}

// TestUnansweredPingCloses: a client that reads every frame but answers
// no ping is told why it is cut: a close frame, 1001 "no answer to ping",
// before its socket ends (#39.4: it ended with no close frame, 1006).
func TestUnansweredPingCloses(t *testing.T) {
	h, srv := startHost(t, Config{PingInterval: 100 * time.Millisecond})
	tk, _ := h.Tickets().Issue("mute")
	rc := dialRaw(t, srv.URL, "ticket="+tk)
	rc.write(t, 0x1, []byte(`{"type":"hello","data":{"mode":"new"}}`))
	rc.conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // bounds a hung test only
	for {
		op, p, err := rc.read()
		if err != nil {
			t.Fatalf("the socket ended without a close frame: %v", err)
		}
		if op != 0x8 {
			continue // data frames and pings, read and never answered
		}
		if len(p) < 2 {
			t.Fatalf("close frame %q without a code", p)
		}
		code, reason := binary.BigEndian.Uint16(p), string(p[2:])
		if code != 1001 || reason != "no answer to ping" {
			t.Fatalf("close %d %q, want 1001 %q", code, reason, "no answer to ping")
		}
		return
	}
}
