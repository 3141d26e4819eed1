package relay

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/muster-gg/muster/internal/wsframe"
)

// closeTimeout bounds the close handshake: how long a side that has been
// sent a close frame may take to answer it.
const closeTimeout = 5 * time.Second

// defaultStallTimeout is how long a write may wait for a peer that reads
// nothing (its TCP window stays shut) before the peer is taken to be gone,
// as nginx's send_timeout; see side.armStall.
const defaultStallTimeout = time.Minute

// side is one of the two connections of a session, written to in whole
// frames only, so that a close frame or a pong can always go out between
// two of them.
type side struct {
	conn net.Conn
	raw  *rawWriter // writes conn, where the platform has one
	// masked is set for the node's side: the relay is its client, and a
	// client's frames are masked (the client's own masks are kept).
	masked bool
	key    [4]byte // masks the frames the relay itself makes

	// While the session is on the event loop (see loop_linux.go), fd is
	// the socket, which the loop alone reads and writes, and conn is
	// closed; spill holds what a write on the loop could not write at
	// once, written first once the session is off the loop.
	onLoop bool
	fd     int
	spill  []byte

	mu        sync.Mutex
	closeSent bool // a close frame has been written; no data follows it
	broken    bool // a write failed

	// stall bounds a write that makes no progress (see armStall); zero
	// means no bound.
	stall time.Duration
	// stallAt is when a write with the connection's own Write moves the
	// write deadline on; guarded by mu.
	stallAt time.Time
	// dl orders the write deadlines of writes that wait with the
	// deadline closing sets, which they must not move.
	dl     sync.Mutex
	ending bool // closing has set the connection's deadline
}

// newSide returns a side for c, whose writes wait at most stall for a
// peer that reads nothing.
func newSide(c net.Conn, stall time.Duration) *side {
	d := &side{stall: stall}
	d.setConn(c)
	return d
}

// setConn makes c the side's connection.
func (d *side) setConn(c net.Conn) {
	d.conn, d.raw = c, newRawWriter(c, d)
}

// errBroken reports a write to a connection on which a write failed
// before, for another writer: the pump that writes data to it must learn
// that it is gone as well.
var errBroken = errors.New("relay: the connection failed")

// write writes frames, unless a close frame has gone out already. It
// returns an error only when the connection failed, now or before.
func (d *side) write(a, b []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.broken {
		return errBroken
	}
	if d.closeSent {
		return nil
	}
	if err := d.writeLocked(a); err != nil {
		return err
	}
	return d.writeLocked(b)
}

func (d *side) writeLocked(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if d.onLoop {
		return d.writeOnLoop(p)
	}
	if err := d.flushLocked(); err != nil {
		return err
	}
	return d.writeConn(p)
}

// flush writes what a write on the loop left over.
func (d *side) flush() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.flushLocked()
}

func (d *side) flushLocked() error {
	if len(d.spill) == 0 || d.broken {
		return nil
	}
	p := d.spill
	d.spill = nil
	return d.writeConn(p)
}

// writeConn writes p to the connection, waiting while it is full, but not
// for longer than the side's stall timeout without progress.
func (d *side) writeConn(p []byte) error {
	var err error
	if d.raw != nil && !testNoRaw {
		err = d.raw.Write(p) // it arms the stall timeout if it has to wait
	} else {
		// This write cannot tell whether it will wait: the deadline is
		// kept between half the stall timeout and all of it ahead.
		if now := time.Now(); d.stall > 0 && now.After(d.stallAt) {
			d.stallAt = now.Add(d.stall / 2)
			d.armStall()
		}
		_, err = d.conn.Write(p)
	}
	if err != nil {
		d.broken = true
		return err
	}
	return nil
}

// control writes a control frame the relay makes, with payload (at most
// wsframe.MaxControl bytes, not masked). It returns an error only when the
// connection failed, now or before.
func (d *side) control(op byte, payload []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.broken {
		return errBroken
	}
	if d.closeSent {
		return nil
	}
	return d.controlLocked(op, payload)
}

func (d *side) controlLocked(op byte, payload []byte) error {
	var f [wsframe.MaxHeader + wsframe.MaxControl]byte
	n := wsframe.PutHeader(f[:], wsframe.Header{Fin: true, Op: op, Masked: d.masked, Key: d.key, Length: uint64(len(payload))})
	m := copy(f[n:], payload)
	if d.masked {
		wsframe.Mask(d.key, f[n:n+m])
	}
	if op == wsframe.OpClose {
		d.closeSent = true
	}
	return d.writeLocked(f[:n+m])
}

// close sends a close frame with code and reason unless one has gone out;
// StatusNoStatusRcvd sends one without a status.
func (d *side) close(code websocket.StatusCode, reason string) {
	var p [wsframe.MaxControl]byte
	n := 0
	if code != websocket.StatusNoStatusRcvd {
		binary.BigEndian.PutUint16(p[:], uint16(code))
		n = 2 + copy(p[2:], reason)
	}
	_ = d.control(wsframe.OpClose, p[:n])
}

// forwardClose writes a close frame read from the other side as it came,
// unless a close frame has gone out already.
func (d *side) forwardClose(frame []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closeSent || d.broken {
		return
	}
	d.closeSent = true
	_ = d.writeLocked(frame)
}

// closing bounds what is left of the connection: the close handshake, or a
// peer that stopped reading.
func (d *side) closing() {
	d.dl.Lock()
	defer d.dl.Unlock()
	d.ending = true
	_ = d.conn.SetDeadline(time.Now().Add(closeTimeout))
}

// armStall bounds a write that has to wait for the peer: unless the peer
// reads some of it within the stall timeout, the write fails, and the
// session ends as when the peer drops. Without the bound a peer whose TCP
// window stays shut would hold the session, its goroutines, buffers and
// sockets for ever, even after the far side gave up and left, as nothing
// then reads the far side. It is called by a writer, which holds d.mu,
// only when a write waits, so that writes that do not wait cost nothing.
func (d *side) armStall() {
	if d.stall <= 0 {
		return
	}
	d.dl.Lock()
	defer d.dl.Unlock()
	if !d.ending {
		_ = d.conn.SetWriteDeadline(time.Now().Add(d.stall))
	}
}

// disarmStall ends the bound armStall set, after the write.
func (d *side) disarmStall() {
	d.dl.Lock()
	defer d.dl.Unlock()
	if !d.ending {
		_ = d.conn.SetWriteDeadline(time.Time{})
	}
}
