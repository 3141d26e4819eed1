//go:build linux && (amd64 || arm64)

package relay

import (
	"syscall"
	"unsafe"
)

// The loop's data path: reading the ready sources, passing their frames on
// with writes that do not wait, and handing a session back when a write
// cannot finish at once.

// dispatch reads the sockets of the first n events, then the sources that
// had more than one turn's worth before, and reports whether the eventfd
// was among the events.
func (l *loop) dispatch(n int) (woke bool) {
	for _, ev := range l.events[:n] {
		if int(ev.Fd) == l.wake {
			woke = true
			continue
		}
		if p := l.pumps[ev.Fd]; p != nil {
			l.read(p, ev.Events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0)
		}
	}
	prev := l.again
	l.again = l.spare[:0]
	for _, t := range prev {
		if l.pumps[int32(t.p.src.fd)] == t.p {
			l.read(t.p, t.rdhup)
		}
	}
	clear(prev)
	l.spare = prev[:0]
	return woke
}

// read reads p's source until it is drained, or for one turn, passing on
// what it reads. A read that does not fill the buffer has drained the
// socket: the poller reports anything that arrives after it as a new
// event, as it is edge-triggered. Except the peer's FIN, which arrives
// without data and is not a new event if it came before the read: when
// the event says it came (rdhup), the loop reads on until the end.
func (l *loop) read(p *pump, rdhup bool) {
	for range loopReads {
		room := len(p.buf) - p.end
		n, errno := recvFrom(uintptr(p.src.fd), p.buf[p.end:])
		switch {
		case errno == syscall.EAGAIN:
			return
		case errno == syscall.EINTR:
			continue
		case errno != 0 || n == 0:
			// The end of the source, or an error: the pump reads it
			// again on its goroutine, and ends as it would have there.
			l.release(p.s)
			return
		}
		p.end += n
		if !l.passOn(p) || n < room && !rdhup {
			return
		}
	}
	l.again = append(l.again, loopTurn{p, rdhup})
}

// recvFrom reads into b (not empty) from the socket fd, which does not
// block.
func recvFrom(fd uintptr, b []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
	return int(n), e
}

// passOn passes on what p has read, and reports false if that handed the
// session back.
func (l *loop) passOn(p *pump) bool {
	if err := p.passOn(); err != nil {
		p.err = err
		l.release(p.s)
		return false
	}
	if len(p.s.client.spill) > 0 || len(p.s.up.spill) > 0 {
		l.release(p.s)
		return false
	}
	return true
}

// writeOnLoop writes p to the socket without waiting, on the loop's
// goroutine. What the socket has no room for is kept in the spill, and
// the loop hands the session back, whose pump writes it first.
func (d *side) writeOnLoop(p []byte) error {
	if len(d.spill) > 0 {
		d.spill = append(d.spill, p...)
		return nil
	}
	rest, e := sendAll(uintptr(d.fd), p)
	switch e {
	case 0:
	case syscall.EAGAIN:
		d.spill = append(d.spill, rest...)
	default:
		d.broken = true
		return e
	}
	return nil
}
