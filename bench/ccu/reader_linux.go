//go:build linux

package main

import (
	"sync"
	"syscall"
	"time"

	"github.com/muster-gg/muster/internal/epoll"
	"github.com/muster-gg/muster/internal/wsframe"
)

// tickReader reads every player's socket from one goroutine, as Muster's
// own event loop does while busy: every millisecond it takes the sockets
// that have something in one epoll_pwait, and reads each once. With a
// goroutine per player, each state woke Go's poller and a goroutine:
// the generator spent more of its core per frame than the server it
// measured, and reached its limit (-load-max) near 2,500 players.
//
// A socket it takes leaves Go's poller (the net.Conn is closed; a
// duplicate of its descriptor is read here and written by wsConn.write).
type tickReader struct {
	epfd  int
	proto protocol

	mu      sync.Mutex
	players map[int32]*player
	fresh   []*player // added since the last tick: their bytes read past the handshake are parsed first
}

// newTickReader starts a reader for proto's players; nil if epoll
// refuses, and the players then read on goroutines of their own.
func newTickReader(proto protocol) *tickReader {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	t := &tickReader{epfd: epfd, proto: proto, players: map[int32]*player{}}
	go t.run()
	return t
}

// add hands p's connection to the reader; false if it could not, and p
// then reads on a goroutine of its own.
func (t *tickReader) add(p *player) bool {
	if t == nil {
		return false
	}
	fd, ok := epoll.DupConn(p.ws.c)
	if !ok {
		return false
	}
	// Under t.mu the reader does not look p up: an event it takes first
	// is taken again at the next tick (level-triggered).
	t.mu.Lock()
	defer t.mu.Unlock()
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
	if err := syscall.EpollCtl(t.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		_ = syscall.Close(fd)
		return false
	}
	w := p.ws
	w.wmu.Lock()
	if n := w.br.Buffered(); n > 0 {
		b, _ := w.br.Peek(n)
		p.in = append(p.in, b...)
	}
	w.fd = fd
	_ = w.c.Close() // off Go's poller; the duplicate keeps the socket
	w.wmu.Unlock()
	t.players[int32(fd)] = p
	t.fresh = append(t.fresh, p)
	return true
}

// run reads until the process ends.
func (t *tickReader) run() {
	var events [256]syscall.EpollEvent
	buf := make([]byte, 64<<10)
	var fresh []*player
	for {
		t.mu.Lock()
		fresh, t.fresh = t.fresh, fresh[:0]
		t.mu.Unlock()
		for _, p := range fresh {
			p.parse(t.proto)
			if p.done {
				t.drop(p, p.ws.fd)
			}
		}
		n := epoll.Wait(t.epfd, events[:], false)
		for i := range max(n, 0) {
			t.mu.Lock()
			p := t.players[events[i].Fd]
			t.mu.Unlock()
			if p == nil {
				continue
			}
			k, err := syscall.Read(p.ws.fd, buf)
			if k > 0 {
				p.in = append(p.in, buf[:k]...)
				p.parse(t.proto)
			}
			if p.done || k <= 0 && err != syscall.EAGAIN {
				t.drop(p, p.ws.fd)
			}
		}
		if n < len(events) {
			time.Sleep(time.Millisecond)
		}
	}
}

// drop forgets p, whose connection ended.
func (t *tickReader) drop(p *player, fd int) {
	p.done = true
	t.mu.Lock()
	delete(t.players, int32(fd))
	t.mu.Unlock()
	_ = syscall.EpollCtl(t.epfd, syscall.EPOLL_CTL_DEL, fd, nil)
}

// parse handles the whole frames in p.in: a data message goes to
// p.handle, a ping is answered, a close ends the player. The servers
// send no frame over 64 KiB to the generator, and none fragmented, but
// both are read.
func (p *player) parse(proto protocol) {
	b := p.in
	var h wsframe.Header
	for !p.done {
		pl, rest, ok, err := nextFrame(b, &h)
		if err != nil { // the server broke the protocol: the player ends
			p.done = true
			break
		}
		if !ok {
			break
		}
		fin, op := h.Fin, h.Op
		b = rest
		switch {
		case op == wsframe.OpClose:
			p.ws.write(wsframe.OpClose, pl)
			p.done = true
		case op == wsframe.OpPing:
			p.ws.write(wsframe.OpPong, pl)
		case op >= wsframe.OpClose: // a pong
		case op != wsframe.OpContinuation && fin:
			p.handle(proto, pl)
		default:
			if op != wsframe.OpContinuation {
				p.msg = p.msg[:0]
			}
			p.msg = append(p.msg, pl...)
			if fin {
				p.handle(proto, p.msg)
			}
		}
	}
	p.in = append(p.in[:0], b...)
}

// nextFrame splits the first frame off b, its header parsed into h: its
// payload and what follows; ok is false while it is not whole, and err is
// set for a frame that breaks RFC 6455 or is masked (a server's must not
// be).
func nextFrame(b []byte, h *wsframe.Header) (payload, rest []byte, ok bool, err error) {
	ok, err = wsframe.Parse(b, h)
	if err == nil && h.Size != 0 && h.Masked {
		err = errMasked
	}
	if err != nil || !ok || uint64(len(b)-h.Size) < h.Length {
		return nil, b, false, err
	}
	end := h.Size + int(h.Length)
	return b[h.Size:end], b[end:], true, nil
}

// writeFD writes b whole to the non-blocking descriptor fd, waiting for
// room in the socket for a second at most.
func writeFD(fd int, b []byte) error {
	deadline := time.Now().Add(time.Second)
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		switch {
		case err == syscall.EAGAIN || err == syscall.EINTR:
			if time.Now().After(deadline) {
				return syscall.ETIMEDOUT
			}
			time.Sleep(100 * time.Microsecond)
		case err != nil:
			return err
		default:
			b = b[n:]
		}
	}
	return nil
}
