//go:build unix

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/muster-gg/muster/internal/wsframe"
)

// wsConn is the load generator's side of one WebSocket: a handshake and
// the frames, written here rather than taken from a library so that the
// generator spends as little of its core as it can per frame (one read
// buffer per connection, no per-frame allocation, no goroutine per write).
type wsConn struct {
	c   net.Conn
	br  *bufio.Reader
	msg []byte // the message being read, reused

	wmu  sync.Mutex // the sender and the reader's pongs write
	wbuf []byte
	fd   int // once a tickReader took the socket, its descriptor, written here; else -1
}

// dialWS connects to ws://addr+path.
func dialWS(addr, path string, timeout time.Duration) (*wsConn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(timeout))
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(c, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		c.Close()
		return nil, fmt.Errorf("upgrade: %s", resp.Status)
	}
	c.SetDeadline(time.Time{})
	return &wsConn{c: c, br: br, fd: -1}, nil
}

// write writes one frame, masked with a key of zeros (a client must mask;
// the key is the client's to choose, and a zero key keeps the payload as
// it is).
func (w *wsConn) write(op byte, payload []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	h := wsframe.Header{Fin: true, Op: op, Masked: true, Length: uint64(len(payload))}
	b := slices.Grow(w.wbuf[:0], wsframe.MaxHeader+len(payload))
	b = b[:wsframe.PutHeader(b[:wsframe.MaxHeader], h)]
	b = append(b, payload...)
	w.wbuf = b
	if w.fd >= 0 {
		return writeFD(w.fd, b)
	}
	_, err := w.c.Write(b)
	return err
}

var errClosed = errors.New("ws: closed by the server")

// read returns the next data message; its bytes are good until the next
// call. Pings are answered on the way.
func (w *wsConn) read() (op byte, msg []byte, err error) {
	w.msg = w.msg[:0]
	var first byte
	for {
		var h wsframe.Header
		if err := w.readHeader(&h); err != nil {
			return 0, nil, err
		}
		fin, fop, n := h.Fin, h.Op, h.Length
		if n > 1<<20 {
			return 0, nil, fmt.Errorf("ws: frame of %d bytes", n)
		}
		if fop >= wsframe.OpClose { // a control frame, possibly between fragments
			var ctl [125]byte
			p := ctl[:n]
			if _, err := io.ReadFull(w.br, p); err != nil {
				return 0, nil, err
			}
			switch fop {
			case wsframe.OpClose:
				w.write(wsframe.OpClose, p)
				return 0, nil, errClosed
			case wsframe.OpPing:
				if err := w.write(wsframe.OpPong, p); err != nil {
					return 0, nil, err
				}
			}
			continue
		}
		if fop != wsframe.OpContinuation {
			first = fop
		}
		start := len(w.msg)
		w.msg = slices.Grow(w.msg, int(n))[:start+int(n)]
		if _, err := io.ReadFull(w.br, w.msg[start:]); err != nil {
			return 0, nil, err
		}
		if fin {
			return first, w.msg, nil
		}
	}
}

// readHeader reads the next frame header into h.
func (w *wsConn) readHeader(h *wsframe.Header) error {
	for n := 2; ; n = h.Size {
		b, err := w.br.Peek(n)
		if err != nil {
			return err
		}
		ok, err := wsframe.Parse(b, h)
		if err == nil && h.Size != 0 && h.Masked {
			err = errMasked
		}
		if err != nil {
			return err
		}
		if ok {
			_, err = w.br.Discard(h.Size)
			return err
		}
	}
}

// errMasked reports a masked frame, which a server must not send.
var errMasked = errors.New("ws: a masked frame from the server")

func (w *wsConn) close() { w.c.Close() }
