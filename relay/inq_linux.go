//go:build linux && (amd64 || arm64)

package relay

import (
	"io"
	"net"
	"syscall"
	"unsafe"
)

// tcpInq is Linux's TCP_INQ socket option (since 4.18), and TCP_CM_INQ, the
// type of the control message it adds to recvmsg: the number of bytes left
// in the receive queue after the read, or 1 when only the peer's FIN is
// left (tcp_inq_hint), so that a reader knows it must read again.
const tcpInq = 36

// tcpRawConn returns the raw connection of c if c is a TCP connection,
// otherwise nil.
func tcpRawConn(c net.Conn) syscall.RawConn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// inqConn returns the raw connection of c if c is a TCP connection on
// which the kernel reports, with each read, how much is left to read;
// otherwise nil, and the pump uses c's own Read.
func inqConn(c net.Conn) syscall.RawConn {
	rc := tcpRawConn(c)
	if rc == nil {
		return nil
	}
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpInq, 1)
	})
	if err != nil || serr != nil {
		return nil
	}
	return rc
}

// inqReader reads with recvmsg and the TCP_INQ control message, with
// everything the call points to allocated once.
type inqReader struct {
	msg syscall.Msghdr
	iov syscall.Iovec
	oob [4]uint64 // the control message, 8-byte aligned
}

// recv reads into b (not empty) from the socket fd. inq is what the kernel
// says is left to read after it, and 1 if it did not say.
func (r *inqReader) recv(fd uintptr, b []byte) (n, inq int, errno syscall.Errno) {
	r.iov.Base = &b[0]
	r.iov.SetLen(len(b))
	r.msg.Iov = &r.iov
	r.msg.Iovlen = 1
	r.msg.Control = (*byte)(unsafe.Pointer(&r.oob[0]))
	r.msg.SetControllen(int(unsafe.Sizeof(r.oob)))
	// The socket does not block (Go made it non-blocking), so the call
	// need not enter the scheduler's system call state; see rawWriter.
	m, _, e := syscall.RawSyscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.msg)), 0)
	if e != 0 {
		return 0, 0, e
	}
	inq = 1
	h := (*syscall.Cmsghdr)(unsafe.Pointer(&r.oob[0]))
	if r.msg.Controllen >= uint64(syscall.SizeofCmsghdr+4) && h.Level == syscall.IPPROTO_TCP && h.Type == tcpInq {
		inq = int(*(*int32)(unsafe.Pointer(&r.oob[syscall.SizeofCmsghdr/8])))
	}
	return int(m), inq, 0
}

// copyInq pumps like copyReads, but does not make the read that returns
// EAGAIN after every message, which Go's own Read needs before it waits
// for the poller: when the kernel says nothing is left to read, it waits
// for the socket to become readable at once.
//
// This is race-free. The poller is edge-triggered, and it only records an
// edge for the waiter; rc.Read clears that record once, before it first
// calls the function, and never between a read and the wait that follows
// it inside the function. So any data (or FIN) that arrives after the
// kernel computed inq is an edge that is either recorded, ending the wait
// at once, or wakes the waiter; and data that arrived before it is counted
// in inq. What the kernel counts includes urgent data, and a FIN alone
// counts 1. A reset is not counted: one that came in with the last data,
// before the read, sharing their edge, is seen only when something is next
// written to the source (the node's next message, or the ping the relay
// sends when the node pings; see probeClient), as the loop's read sees it
// in the event's flags. Deadlines and Close end the wait as they end a Read; the
// function returns after a read that left bytes behind, so that they are
// also checked while the source keeps the buffer full.
func (p *pump) copyInq(rc syscall.RawConn) error {
	if err := p.passOn(); err != nil {
		return err
	}
	var err error
	r := new(inqReader)
	read := func(fd uintptr) bool {
		n, inq, errno := r.recv(fd, p.buf[p.end:])
		switch {
		case errno == syscall.EAGAIN:
			return false // wait for the poller
		case errno == syscall.EINTR:
			return true
		case errno != 0:
			err = errno
			return true
		case n == 0:
			err = io.EOF
			return true
		}
		p.end += n
		if err = p.passOn(); err != nil {
			return true
		}
		return inq > 0
	}
	for {
		if rerr := rc.Read(read); err != nil || rerr != nil {
			if err == nil {
				err = rerr
			}
			return err
		}
	}
}

// send writes p to the socket fd with send(2), which, unlike write(2),
// does not go through the file layer (vfs_write was 3% of the relay's
// CPU), and with MSG_NOSIGNAL, so that a peer that reset the connection
// is an EPIPE and not also a signal. The socket does not block.
func send(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), syscall.MSG_NOSIGNAL, 0, 0)
	return int(n), e
}

// sendAll sends p to the socket fd until all of it is written or the
// socket is full or fails, and returns what is left to write: empty, or
// with EAGAIN (full) or the error.
func sendAll(fd uintptr, p []byte) ([]byte, syscall.Errno) {
	for len(p) > 0 {
		n, e := send(fd, p)
		switch e {
		case 0:
			p = p[n:]
		case syscall.EINTR:
		default:
			return p, e
		}
	}
	return p, 0
}

// rawWriter writes to a TCP connection as its Write does, waiting for the
// poller when the socket is full, but with send(2) made as a raw system
// call. The socket is non-blocking, so the call cannot block; Go's own
// Write enters the scheduler's system call state for it, and that wakes
// the runtime's monitor thread (sysmon) whenever the process was idle —
// a futex wake-up, a sleep, and two context switches for every message
// the relay passes on after a pause, which is most of them.
type rawWriter struct {
	rc syscall.RawConn
	fn func(fd uintptr) bool // w.write, bound once
	// d is the side written to: a write that has to wait arms its stall
	// timeout, once and again after every bit of progress.
	d     *side
	armed bool
	p     []byte
	err   error
}

// newRawWriter returns a rawWriter for c, the connection of d, or nil if c
// is not a TCP connection.
func newRawWriter(c net.Conn, d *side) *rawWriter {
	rc := tcpRawConn(c)
	if rc == nil {
		return nil
	}
	w := &rawWriter{rc: rc, d: d}
	w.fn = w.write
	return w
}

// Write writes all of p, unless the connection fails, is closed, its
// write deadline passes or the peer reads nothing of it for the side's
// stall timeout. Calls must not overlap.
func (w *rawWriter) Write(p []byte) error {
	w.p, w.err = p, nil
	err := w.rc.Write(w.fn)
	w.p = nil
	if w.armed {
		w.armed = false
		w.d.disarmStall()
	}
	if err != nil {
		return err
	}
	return w.err
}

func (w *rawWriter) write(fd uintptr) bool {
	var e syscall.Errno
	left := len(w.p)
	w.p, e = sendAll(fd, w.p)
	switch e {
	case 0:
	case syscall.EAGAIN:
		// Wait until the socket is writable, for at most the stall
		// timeout from now: the deadline is set inside rc.Write, and
		// the wait that follows ends when it passes.
		if w.d != nil && (!w.armed || len(w.p) < left) {
			w.armed = true
			w.d.armStall()
		}
		return false
	default:
		w.err = e
	}
	return true
}
