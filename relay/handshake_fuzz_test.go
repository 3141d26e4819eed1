package relay

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// offeredProtocols are the subprotocols the client of these tests offers.
var offeredProtocols = []string{"v2.echo", "v1.echo"}

// clientKey is the Sec-WebSocket-Key of the client of these tests.
const clientKey = "dGhlIHNhbXBsZSBub25jZQ=="

// clientUpgrade is the client's upgrade request for node b, as the relay's
// handler receives it.
func clientUpgrade() *http.Request {
	r := httptest.NewRequest(http.MethodGet, "http://play.example/ws?node=b", nil)
	r.Header.Set("Upgrade", "websocket")
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Sec-WebSocket-Version", "13")
	r.Header.Set("Sec-WebSocket-Key", clientKey)
	r.Header.Set("Sec-WebSocket-Protocol", strings.Join(offeredProtocols, ", "))
	return r
}

// countingConn counts the bytes read from its Conn.
type countingConn struct {
	net.Conn
	read atomic.Int64
}

// Read reads from the Conn and counts what it read.
func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// pipeNode returns a dialNet whose every connection is one end of a
// net.Pipe, counted, and runs node with the other end on a goroutine of its
// own, closing that end when node returns. The returned function waits, at
// most waitFor, for that goroutine to end, and returns the relay's end of
// the last connection.
func pipeNode(t *testing.T, node func(net.Conn)) (dialNet func(context.Context, string, string) (net.Conn, error), wait func() *countingConn) {
	t.Helper()
	var (
		last *countingConn
		done = make(chan struct{})
	)
	dialNet = func(context.Context, string, string) (net.Conn, error) {
		relayEnd, nodeEnd := net.Pipe()
		last = &countingConn{Conn: relayEnd}
		go func() {
			defer close(done)
			defer nodeEnd.Close()
			node(nodeEnd)
		}()
		return last, nil
	}
	wait = func() *countingConn {
		t.Helper()
		recv(t, done, "exit of the node's goroutine")
		return last
	}
	return dialNet, wait
}

// readUpgrade reads the relay's upgrade request from c, as a node would, and
// returns its Sec-WebSocket-Key, or "" when there was no request to read.
func readUpgrade(c net.Conn) string {
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return ""
	}
	return req.Header.Get("Sec-WebSocket-Key")
}

// parseResponse reads the response at the start of answer, as the relay
// reads it, and returns it with its length in bytes.
func parseResponse(answer string) (*http.Response, int, error) {
	sr := strings.NewReader(answer)
	br := bufio.NewReader(sr)
	resp, err := http.ReadResponse(br, nil)
	return resp, len(answer) - sr.Len() - br.Buffered(), err
}

// clientReads completes the client's handshake with up through a net/http
// server, as tryRelay does, and returns the response the client read.
// The server's handler takes up from ups.
func clientReads(t *testing.T, srv *httptest.Server, ups chan<- upstream, up upstream) *http.Response {
	t.Helper()
	ups <- up
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(waitFor))
	req := clientUpgrade()
	req.Host = "play.example"
	if err := req.Write(c); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		t.Fatalf("the client's handshake: %v", err)
	}
	return resp
}

// FuzzUpstreamHandshake answers the relay's upgrade request, as the target
// node, with any bytes; in them, "{accept}" stands for the right
// Sec-WebSocket-Accept. The relay reads at most maxHandshake bytes and
// either fails or takes a 101 upgrade with the right accept key, no
// extension and at most one subprotocol, one the client offered; what the
// node sent after its response is passed on unchanged; and the client's
// handshake response carries the relay's Upgrade, Connection, accept key
// and subprotocol, and no other hop-by-hop header.
func FuzzUpstreamHandshake(f *testing.F) {
	const ok = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Accept: {accept}\r\n"
	f.Add(ok + "\r\n")
	f.Add(ok + "Sec-WebSocket-Protocol: v2.echo\r\nSet-Cookie: s=1\r\nX-Node: b\r\n\r\n")
	f.Add(ok + "\r\n\x81\x06node=b\x88\x02\x03\xe8")                       // frames follow
	f.Add("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")                // not an upgrade
	f.Add(ok + "X-Big: " + strings.Repeat("a", maxHandshake) + "\r\n\r\n") // past the bound
	f.Add(ok + "Sec-WebSocket-Accept: {accept}\r\n\r\n")
	f.Add(ok + "Sec-WebSocket-Accept: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	f.Add(ok + "Sec-WebSocket-Protocol: evil\r\n\r\n")
	f.Add(ok + "Sec-WebSocket-Protocol: v2.echo\r\nSec-WebSocket-Protocol: evil\r\n\r\n")
	f.Add(ok + "Sec-WebSocket-Protocol: v2.echo, v1.echo\r\n\r\n")
	f.Add(ok + "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n")
	f.Add(ok + "Connection: X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\nProxy-Authenticate: Basic\r\nTrailer: X-T\r\n" +
		"Date: Thu, 01 Jan 1970 00:00:00 GMT\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc")
	f.Add(ok + "Connection : close\r\nUpgrade : h2c\r\nSec-WebSocket-Protocol : evil\r\n\r\n")
	f.Add(strings.ReplaceAll(ok, "\r\n", "\n") + "\n\x81\x00")
	f.Add("HTTP/1.1 100 Continue\r\n\r\n" + ok + "\r\n")
	f.Add(ok)

	rl, err := New(Config{NodeID: "a", Secret: testSecret, DialTimeout: waitFor}, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { rl.Close() })
	ups := make(chan upstream, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, _, err := accept(w, r, <-ups); err == nil {
			c.Close()
		}
	}))
	f.Cleanup(srv.Close)
	client := netip.MustParseAddrPort("198.51.100.1:5")

	f.Fuzz(func(t *testing.T, answer string) {
		var key, sent string
		dialNet, wait := pipeNode(t, func(c net.Conn) {
			if key = readUpgrade(c); key != "" {
				sent = strings.ReplaceAll(answer, "{accept}", acceptKey(key))
				_, _ = io.WriteString(c, sent)
			}
		})
		rl.dialNet = dialNet
		up, err := rl.dial(clientUpgrade(), "b", "10.77.0.1:7000", client)
		if err == nil {
			up.conn.Close() // the node may still be writing
		}
		if read := wait().read.Load(); read > maxHandshake {
			t.Fatalf("the relay read %d bytes of the handshake, more than %d", read, maxHandshake)
		}
		if key == "" {
			t.Fatal("the node read no upgrade request")
		}
		if err != nil {
			return
		}

		if resp, end, err := parseResponse(sent); err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("took %q as an upgrade", sent)
		} else if !strings.HasPrefix(sent[end:], string(up.data)) {
			t.Fatalf("passed on %q after the response, but the node sent %q", up.data, sent[end:])
		}
		if got := up.header.Values("Sec-WebSocket-Accept"); len(got) != 1 || got[0] != acceptKey(key) {
			t.Fatalf("took Sec-WebSocket-Accept %q, want only %q", got, acceptKey(key))
		}
		if got := up.header.Values("Sec-WebSocket-Extensions"); len(got) > 0 {
			t.Fatalf("took extensions %q", got)
		}
		protos := up.header.Values("Sec-WebSocket-Protocol")
		if len(protos) > 1 || len(protos) == 1 && protos[0] != up.subprotocol ||
			up.subprotocol != "" && !slices.Contains(offeredProtocols, up.subprotocol) {
			t.Fatalf("took subprotocol %q from %q, offered %q", up.subprotocol, protos, offeredProtocols)
		}

		resp := clientReads(t, srv, ups, up)
		if resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("the client read %s", resp.Status)
		}
		want := map[string][]string{
			"Upgrade":              {"websocket"},
			"Connection":           {"Upgrade"},
			"Sec-Websocket-Accept": {acceptKey(clientKey)},
		}
		if up.subprotocol != "" {
			want["Sec-Websocket-Protocol"] = []string{up.subprotocol}
		}
		for k, v := range want {
			if got := resp.Header.Values(k); !slices.Equal(got, v) {
				t.Errorf("the client read %s %q, want %q", k, got, v)
			}
		}
		for k, v := range resp.Header {
			hop := hopHeaders[k] || isListedInConnection(up.header, k)
			if _, set := want[k]; !set && hop && (k != "Date" || slices.Contains(up.header.Values("Date"), v[0])) {
				t.Errorf("the node's %s %q reached the client", k, v)
			}
		}
	})
}

// TestUpstreamHandshakeTimeout: a node that does not finish its handshake
// response, whether it never answers, stops halfway or sends it a byte at a
// time, is given up at DialTimeout, and its connection closed.
func TestUpstreamHandshakeTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	status := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
	cases := []struct {
		name string
		node func(c net.Conn)
	}{
		{"never reads the request", func(net.Conn) {}},
		{"never answers", func(c net.Conn) { readUpgrade(c) }},
		{"stops halfway", func(c net.Conn) {
			readUpgrade(c)
			_, _ = io.WriteString(c, status)
		}},
		{"a byte at a time", func(c net.Conn) {
			readUpgrade(c)
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for b := []byte(status + strings.Repeat("X-Slow: 1\r\n", maxHandshake)); ; b = b[1:] {
				if _, err := c.Write(b[:1]); err != nil {
					return
				}
				<-tick.C
			}
		}},
	}
	for _, tc := range cases {
		for _, transport := range []string{"pipe", "tcp"} {
			t.Run(tc.name+" over "+transport, func(t *testing.T) {
				t.Parallel()
				rl, err := New(Config{NodeID: "a", Secret: testSecret, DialTimeout: timeout}, nil, slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { rl.Close() })
				// The node, once done, waits for the relay to give up
				// and then reads until the relay closes the connection.
				gaveUp := make(chan struct{})
				node := func(c net.Conn) {
					tc.node(c)
					<-gaveUp
					_, _ = io.Copy(io.Discard, c)
				}
				var wait func()
				if transport == "pipe" {
					dialNet, waitPipe := pipeNode(t, node)
					rl.dialNet = dialNet
					wait = func() { waitPipe() }
				} else {
					done := make(chan struct{})
					addr := acceptAll(t, func(c net.Conn) {
						defer close(done)
						node(c)
					})
					rl.dialNet = func(ctx context.Context, network, _ string) (net.Conn, error) {
						return rl.dialer.DialContext(ctx, network, addr)
					}
					wait = func() { recv(t, done, "exit of the node's goroutine") }
				}

				start := time.Now()
				ended := make(chan error, 1)
				go func() {
					up, err := rl.dial(clientUpgrade(), "b", "10.77.0.1:7000", netip.MustParseAddrPort("198.51.100.1:5"))
					if err == nil {
						up.conn.Close()
					}
					ended <- err
				}()
				err = recv(t, ended, "return from dial")
				took := time.Since(start)
				close(gaveUp)
				if err == nil {
					t.Fatal("the handshake succeeded")
				}
				if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Errorf("error %v, want the dial timeout", err)
				}
				if took < timeout {
					t.Errorf("gave up after %v, before the timeout of %v", took, timeout)
				}
				wait() // the node reads the close
			})
		}
	}
}
