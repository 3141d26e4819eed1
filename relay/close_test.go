package relay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/internal/wsframe"
)

// relayed connects a client through a to b and returns it with b's node.
func relayed(t *testing.T, opts ...nodeOpt) (*websocket.Conn, *testNode, *testNode) {
	t.Helper()
	dir := &dirMap{}
	a := startNode(t, "a", dir, opts...)
	b := startNode(t, "b", dir, opts...)
	c := dialRelayed(t, a, b, dialOpts{})
	recv(t, b.seen, "request at b")
	return c, a, b
}

func TestRelayCloseFromClient(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		code   websocket.StatusCode
		reason string
	}{
		{"normal", websocket.StatusNormalClosure, ""},
		{"application code and reason", 4000, "bye for now"},
		{"policy violation", websocket.StatusPolicyViolation, "cheating"},
		{"no status", websocket.StatusNoStatusRcvd, ""},
		{"longest reason", 4999, string(make125('r'))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, _, b := relayed(t)
			_ = c.Close(tc.code, tc.reason)
			got := recv(t, b.ends, "end of b's connection")
			if got.Code != tc.code || got.Reason != tc.reason {
				t.Errorf("b saw close %d %q, want %d %q", got.Code, got.Reason, tc.code, tc.reason)
			}
		})
	}
}

func make125(c byte) []byte {
	b := make([]byte, 123) // 125-byte control payload minus the 2-byte code
	for i := range b {
		b[i] = c
	}
	return b
}

func TestRelayCloseFromNode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		command string
		code    websocket.StatusCode
		reason  string
	}{
		{"normal", "close 1000", websocket.StatusNormalClosure, ""},
		{"application code and reason", "close 4001 room ended", 4001, "room ended"},
		{"try again later", "close 1013 full", websocket.StatusTryAgainLater, "full"},
		{"no status", "close 1005", websocket.StatusNoStatusRcvd, ""},
		{"abrupt drop", "drop", websocket.StatusGoingAway, ""},
		{"dies mid-message", "die", websocket.StatusGoingAway, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, a, _ := relayed(t)
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			if err := c.Write(ctx, websocket.MessageText, []byte(tc.command)); err != nil {
				t.Fatal(err)
			}
			n, err := readUntilError(ctx, c)
			if n != 0 {
				// In particular the half message of "die" must not arrive as a whole one.
				t.Errorf("client received %d complete messages after %q, want none", n, tc.command)
			}
			if got := closeErrorOf(err); got.Code != tc.code || got.Reason != tc.reason {
				t.Errorf("client saw %v, want close %d %q", err, tc.code, tc.reason)
			}
			testrun.WaitFor(t, "no active relayed connection", func() bool { return a.relay.Stats().Active == 0 })
		})
	}
}

// readUntilError reads and discards messages until a read fails, and
// returns how many complete messages it read.
func readUntilError(ctx context.Context, c *websocket.Conn) (int, error) {
	for n := 0; ; n++ {
		_, r, err := c.Reader(ctx)
		if err != nil {
			return n, err
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			return n, err
		}
	}
}

func TestRelayClientDrop(t *testing.T) {
	t.Parallel()
	c, a, b := relayed(t)
	_ = c.CloseNow() // TCP close, no close frame
	if got := recv(t, b.ends, "end of b's connection"); got.Code != websocket.StatusGoingAway {
		t.Errorf("b saw close %d %q after the client dropped, want 1001", got.Code, got.Reason)
	}
	testrun.WaitFor(t, "no active relayed connection", func() bool { return a.relay.Stats().Active == 0 })
}

func TestRelayReadLimit(t *testing.T) {
	t.Parallel()
	c, _, b := relayed(t, withReadLimit(1000))
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	// At the limit: relayed.
	if err := c.Write(ctx, websocket.MessageBinary, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if _, data, err := c.Read(ctx); err != nil || len(data) != 1000 {
		t.Fatalf("echo of a message at the limit: %d bytes, %v", len(data), err)
	}
	// Above it: the client is told 1009, the node that the client went away.
	if err := c.Write(ctx, websocket.MessageBinary, make([]byte, 1001)); err != nil {
		t.Fatal(err)
	}
	if _, err := readUntilError(ctx, c); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("client saw %v, want 1009", err)
	}
	if got := recv(t, b.ends, "end of b's connection"); got.Code != websocket.StatusGoingAway {
		t.Errorf("b saw close %d %q, want 1001", got.Code, got.Reason)
	}
}

func TestCloseFor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		err        error
		wantCode   websocket.StatusCode
		wantReason string
	}{
		{"normal", websocket.CloseError{Code: 1000, Reason: "done"}, 1000, "done"},
		{"private range", websocket.CloseError{Code: 4999, Reason: "x"}, 4999, "x"},
		{"library range", websocket.CloseError{Code: 3000}, 3000, ""},
		{"no status stays no status", websocket.CloseError{Code: 1005}, 1005, ""},
		{"abnormal", websocket.CloseError{Code: 1006, Reason: "?"}, 1001, ""},
		{"tls", websocket.CloseError{Code: 1015}, 1001, ""},
		{"reserved 1004", websocket.CloseError{Code: 1004}, 1001, ""},
		{"out of range", websocket.CloseError{Code: 5000}, 1001, ""},
		{"wrapped", errors.Join(errors.New("read"), websocket.CloseError{Code: 1008, Reason: "p"}), 1008, "p"},
		{"eof", io.EOF, 1001, ""},
		{"closed", net.ErrClosed, 1001, ""},
		{"too big", websocket.ErrMessageTooBig, 1001, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, reason := closeFor(tc.err)
			if code != tc.wantCode || reason != tc.wantReason {
				t.Errorf("closeFor(%v) = %d %q, want %d %q", tc.err, code, reason, tc.wantCode, tc.wantReason)
			}
		})
	}
}

// TestRelayMessageThenFIN has raw clients each send a message and shut
// down their side of the TCP connection at once, so that the FIN arrives
// right behind the message, often read together with it. Each time, the
// node must get the message and then see the client go away (1001): a
// relay that took a short read for an empty socket, and waited for the
// poller without looking whether the FIN had come (EPOLLRDHUP, on the
// loop), would miss it and hang.
func TestRelayMessageThenFIN(t *testing.T) {
	t.Parallel()
	a, b := startPair(t)
	const conns = 50
	key := [4]byte{7, 1, 2, 9}
	var sent uint64
	for i := range conns {
		c, err := net.Dial("tcp", a.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, upgradeRequest("/ws?node=b", "play.example.com"))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("conn %d: handshake: %v %v", i, resp, err)
		}
		recv(t, b.seen, "request at b")
		buf := make([]byte, 256)
		if h, ok := readFrame(br, buf); !ok || string(buf[h.Size:h.Size+int(h.Length)]) != "node=b" {
			t.Fatalf("conn %d: first frame %+v %q", i, h, buf[h.Size:h.Size+int(h.Length)])
		}
		payload := fmt.Appendf(nil, "last message %d", i)
		frame := make([]byte, wsframe.MaxHeader+len(payload))
		n := wsframe.PutHeader(frame, wsframe.Header{Fin: true, Op: wsframe.OpText, Masked: true, Key: key, Length: uint64(len(payload))})
		n += copy(frame[n:], payload)
		wsframe.Mask(key, frame[n-len(payload):n])
		if _, err := c.Write(frame[:n]); err != nil {
			t.Fatal(err)
		}
		if err := c.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		sent += uint64(len(payload))
		if got := recv(t, b.ends, "end at b"); got.Code != websocket.StatusGoingAway {
			t.Fatalf("conn %d: b saw %d %q after the client's FIN, want 1001", i, got.Code, got.Reason)
		}
		if st := a.relay.Stats(); st.BytesToNode != sent {
			t.Fatalf("conn %d: %d bytes relayed to b, want %d", i, st.BytesToNode, sent)
		}
		_ = c.Close()
	}
	testrun.WaitFor(t, "no active relayed connection", func() bool { return a.relay.Stats().Active == 0 })
}
