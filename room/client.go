package room

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/muster-gg/muster/internal/wsframe"
)

// Close codes the host uses. 1009 (message too big) is sent by the
// WebSocket library when a frame exceeds Config.ReadLimit.
const (
	StatusGoingAway   = websocket.StatusGoingAway
	StatusRedirected  = websocket.StatusNormalClosure
	StatusBadHello    = websocket.StatusCode(4000)
	StatusBadTicket   = websocket.StatusCode(4001)
	StatusBadPacket   = websocket.StatusCode(4002)
	StatusUnknownType = websocket.StatusCode(4003)
	StatusReplaced    = websocket.StatusCode(4004)
	StatusLimited     = websocket.StatusCode(4005)
	StatusTooSlow     = websocket.StatusCode(4006)
)

// writeTimeout bounds one frame's write to a client.
const writeTimeout = 5 * time.Second

// Client is one player's connection. Its methods are safe for concurrent
// use and never block on the network.
type Client struct {
	id      string
	ip      string
	asked   string // the node the client's URL named (?node=), if any
	rejoin  bool   // its hello said "rejoin": it may have a seat or a handoff
	arrived time.Time
	conn    *websocket.Conn // nil once the event loop serves the connection (attach)
	msgType websocket.MessageType
	encode  func(Packet) ([]byte, error)
	send    chan []byte
	done    chan struct{} // closed by Close
	rbuf    []byte        // the read buffer, reused (readFrame); the session's goroutine only
	// wtimer cuts the connection when one write takes longer than
	// writeTimeout: armed around each write by the writer, one timer for
	// the connection's life rather than a context and a timer per frame.
	wtimer *time.Timer

	unclaimed bool // its hello could not claim its connection: its session does (connectLater)

	// The event loop (loop_linux.go): lc once the loop serves the
	// connection; handover asks the writer to stop for it, and writerDone
	// is closed when the writer has returned.
	lc         atomic.Pointer[loopConn]
	handover   chan chan bool
	writerDone chan struct{}

	mu          sync.Mutex
	room        string
	closeCode   websocket.StatusCode
	closeReason string
	going       bool // told to go elsewhere: no longer counted here
}

// ID returns the player id the client's ticket named.
func (c *Client) ID() string { return c.id }

// IP returns the client's address as the server resolved it (restored by
// the relay when the client came through another server).
func (c *Client) IP() string { return c.ip }

// Arrived returns when the client said hello.
func (c *Client) Arrived() time.Time { return c.arrived }

// Moved reports whether the client came here by a redirect (its URL named
// a server with ?node=): the move cooldown (F7) applies to it from
// Arrived. A client that connected afresh may be moved at once.
func (c *Client) Moved() bool { return c.asked != "" }

// CooldownFrom returns when the client's move cooldown started: Arrived
// for a client that was moved here, the zero time for one that was not.
func (c *Client) CooldownFrom() time.Time {
	if c.Moved() {
		return c.arrived
	}
	return time.Time{}
}

// Room returns the id of the room the player is seated in, or "".
func (c *Client) Room() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.room
}

func (c *Client) setRoom(id string) {
	c.mu.Lock()
	c.room = id
	c.mu.Unlock()
}

// leftRoom clears the client's room if it is id: a leave applied late
// must not clear a seat taken since in another room.
func (c *Client) leftRoom(id string) {
	c.mu.Lock()
	if c.room == id {
		c.room = ""
	}
	c.mu.Unlock()
}

// Send queues p for the client. A client too slow to keep up with its
// queue is disconnected (StatusTooSlow).
func (c *Client) Send(p Packet) error {
	frame, err := c.encode(p)
	if err != nil {
		return err
	}
	c.sendFrame(frame)
	return nil
}

func (c *Client) sendFrame(frame []byte) {
	if lc := c.lc.Load(); lc != nil {
		lc.write(c.opcode(), frame)
		return
	}
	select {
	case <-c.done:
	case c.send <- frame:
		if lc := c.lc.Load(); lc != nil {
			// The loop took the connection meanwhile, perhaps after
			// it emptied this queue: write what is left in it now.
			lc.flushQueued()
		}
	default:
		c.Close(StatusTooSlow, "client too slow")
	}
}

// Close closes the connection with code and reason after the frames
// already queued are written. Only the first call counts. A reason that is
// not valid UTF-8, or longer than a close frame carries (123 bytes), is
// mended and cut at a rune.
func (c *Client) Close(code websocket.StatusCode, reason string) {
	c.mu.Lock()
	if c.closeCode != 0 {
		c.mu.Unlock()
		return
	}
	c.closeCode, c.closeReason = code, closeReason(reason)
	close(c.done)
	lc, conn := c.lc.Load(), c.conn
	c.mu.Unlock()
	if lc != nil {
		lc.close(code, c.closeReason)
		return
	}
	if cutAtOnce(code) {
		// It does not read, or it broke the protocol: cut the connection
		// now, which also ends a write the writer may be blocked in.
		conn.CloseNow()
	}
}

// cutAtOnce reports whether a close with code cuts the connection on the
// portable path without the close handshake: a client too slow reads
// nothing, and one that broke RFC 6455 (1002, which coder/websocket sent
// it already) cannot be trusted to answer (section 7.1.7, "Fail the
// WebSocket Connection").
func cutAtOnce(code websocket.StatusCode) bool {
	return code == StatusTooSlow || code == websocket.StatusProtocolError
}

// Done returns a channel closed when Close was called.
func (c *Client) Done() <-chan struct{} { return c.done }

// write writes the queued frames until Close, then the frames still
// queued, then the close frame; every ping interval it pings the client
// and closes (1001) a client that does not answer within another, bounded
// by writeTimeout and the close handshake's wait. It owns the end
// of the connection, and the ping in flight: it returns once that is over.
//
// The pong is awaited beside the writes, never in their way: a client
// whose answer takes longer than its send queue lasts (a round trip of
// seconds on a bad network or a starved machine) still gets every frame,
// where a writer waiting for the pong let the queue overflow and cut the
// client as too slow (4006).
func (c *Client) write(ping time.Duration) {
	t := time.NewTicker(ping)
	defer t.Stop()
	var pinging chan struct{} // the ping in flight, closed when it is over; nil when none
	defer func() {
		if pinging != nil {
			<-pinging // the connection is closed by now, which ends the wait
		}
	}()
	for {
		select {
		case <-t.C:
			if pinging != nil {
				select {
				case <-pinging:
				default:
					continue // still in flight: it gives up within one interval
				}
			}
			pinging = make(chan struct{})
			go c.ping(ping, pinging)
		case reply := <-c.handover:
			if pinging != nil {
				select {
				case <-pinging:
					pinging = nil
				default:
					reply <- false // its pong would come to the loop
					continue
				}
			}
			c.flush()
			reply <- true
			return
		case frame := <-c.send:
			if c.writeFrame(frame) != nil {
				// The client does not take what is written: a close
				// frame would wait for it too. Cut the connection.
				c.conn.CloseNow()
				c.Close(StatusGoingAway, "write failed")
				return
			}
		case <-c.done:
			c.mu.Lock()
			code, reason := c.closeCode, c.closeReason
			c.mu.Unlock()
			if cutAtOnce(code) {
				return // Close cut the connection: nothing gets through
			}
			c.flush()
			c.conn.Close(code, reason)
			return
		}
	}
}

// ping pings the client and closes its connection (1001, "no answer to
// ping") when it does not answer within timeout, then closes done. A
// client that stopped reading answers no ping; the socket buffers would
// otherwise hide it for minutes.
func (c *Client) ping(timeout time.Duration, done chan struct{}) {
	defer close(done)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := c.conn.Ping(ctx); err != nil {
		select {
		case <-c.done:
			return // closing anyway: the writer ends the connection
		default:
		}
		// The writer sends the close frame, bounded as every close is: a
		// client that reads but does not answer is told why.
		c.Close(StatusGoingAway, "no answer to ping")
	}
}

// flush writes the frames still queued, without waiting for more.
func (c *Client) flush() {
	for {
		select {
		case frame := <-c.send:
			if c.writeFrame(frame) != nil {
				return
			}
		default:
			return
		}
	}
}

func (c *Client) writeFrame(frame []byte) error {
	if c.wtimer == nil {
		c.wtimer = time.AfterFunc(writeTimeout, func() { c.conn.CloseNow() })
	} else {
		c.wtimer.Reset(writeTimeout)
	}
	err := c.conn.Write(context.Background(), c.msgType, frame)
	c.wtimer.Stop()
	return err
}

// opcode is the WebSocket opcode of the client's messages.
func (c *Client) opcode() byte {
	if c.msgType == websocket.MessageBinary {
		return wsframe.OpBinary
	}
	return wsframe.OpText
}

// handOver stops the client's writer, after the frames queued, for the
// event loop to take the connection; false if the writer has ended or
// would not (a ping in flight).
func (c *Client) handOver() bool {
	if c.handover == nil {
		return false
	}
	reply := make(chan bool, 1)
	select {
	case c.handover <- reply:
		return <-reply
	case <-c.writerDone:
		return false
	}
}

// attach makes lc the client's connection: from now on its frames go to
// the loop. A Close that came since the writer stopped is applied.
func (c *Client) attach(lc *loopConn) {
	c.mu.Lock()
	c.lc.Store(lc)
	// The upgrade's connection and its buffers (8 KB) are the loop's
	// socket now: let them go.
	c.conn = nil
	code, reason := c.closeCode, c.closeReason
	c.mu.Unlock()
	if code != 0 {
		lc.close(code, reason)
		return
	}
	lc.flushQueued()
}
