//go:build unix

package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
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

const (
	opCont   = 0x0
	opText   = 0x1
	opBinary = 0x2
	opClose  = 0x8
	opPing   = 0x9
	opPong   = 0xA
)

// write writes one frame, masked with a key of zeros (a client must mask;
// the key is the client's to choose, and a zero key keeps the payload as
// it is).
func (w *wsConn) write(op byte, payload []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	b := w.wbuf[:0]
	b = append(b, 0x80|op)
	switch n := len(payload); {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n < 1<<16:
		b = append(b, 0x80|126, byte(n>>8), byte(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	b = append(b, 0, 0, 0, 0)
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
		var h [2]byte
		if _, err := io.ReadFull(w.br, h[:]); err != nil {
			return 0, nil, err
		}
		fin, fop := h[0]&0x80 != 0, h[0]&0x0F
		n := uint64(h[1] & 0x7F)
		switch n {
		case 126:
			var e [2]byte
			if _, err := io.ReadFull(w.br, e[:]); err != nil {
				return 0, nil, err
			}
			n = uint64(binary.BigEndian.Uint16(e[:]))
		case 127:
			var e [8]byte
			if _, err := io.ReadFull(w.br, e[:]); err != nil {
				return 0, nil, err
			}
			n = binary.BigEndian.Uint64(e[:])
		}
		if n > 1<<20 {
			return 0, nil, fmt.Errorf("ws: frame of %d bytes", n)
		}
		if fop >= opClose { // a control frame, possibly between fragments
			var ctl [125]byte
			p := ctl[:n]
			if _, err := io.ReadFull(w.br, p); err != nil {
				return 0, nil, err
			}
			switch fop {
			case opClose:
				w.write(opClose, p)
				return 0, nil, errClosed
			case opPing:
				if err := w.write(opPong, p); err != nil {
					return 0, nil, err
				}
			}
			continue
		}
		if fop != opCont {
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

func (w *wsConn) close() { w.c.Close() }
