package testbin

import (
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// SlowProxy is a loopback TCP proxy in front of a server (a redis-server)
// that a test can make slow while clients stay connected: it delays every
// reply, holds replies back (a server that accepted, answered, and then
// stalls with the connection open), or lets them through a byte at a
// time; and then lets them through again. A stall holds the requests
// too: a stalled server runs nothing until it goes on. It is safe for
// concurrent use, and closed when the test ends.
type SlowProxy struct {
	// Addr is the proxy's loopback address, host:port.
	Addr string

	upstream string
	l        net.Listener
	slowed   atomic.Int64 // chunks a mode other than Pass held back
	passed   atomic.Int64 // reply chunks written
	keep     atomic.Bool  // see KeepRequests

	mu      sync.Mutex
	mode    proxyMode
	changed chan struct{}   // closed when the mode changes
	held    map[uint64]bool // the chunks held back now, by number
	nextID  uint64          // the last chunk number given
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

type proxyMode struct {
	delay   time.Duration // each reply chunk written this long after it came
	stall   bool          // nothing written either way
	trickle time.Duration // one byte of a reply at a time, this far apart
}

// StartSlowProxy starts a proxy to upstream on a free loopback port that
// passes everything through until told otherwise.
func StartSlowProxy(tb testing.TB, upstream string) *SlowProxy {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &SlowProxy{Addr: l.Addr().String(), upstream: upstream, l: l, changed: make(chan struct{}), held: map[uint64]bool{}, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	tb.Cleanup(p.Close)
	return p
}

// Pass lets everything through at once again, the held chunks first.
func (p *SlowProxy) Pass() { p.set(proxyMode{}) }

// Delay writes each reply d after it came from the server.
func (p *SlowProxy) Delay(d time.Duration) { p.set(proxyMode{delay: d}) }

// Stall holds every request and reply, those on their way and those to
// come, until the mode changes; the connections stay open.
func (p *SlowProxy) Stall() { p.set(proxyMode{stall: true}) }

// Trickle writes replies one byte at a time, every byte d after the last.
func (p *SlowProxy) Trickle(d time.Duration) { p.set(proxyMode{trickle: d}) }

// KeepRequests makes a request that a stall holds reach the server when
// the stall ends even if its client has closed the connection meanwhile,
// as a server that had read the request would still run it: a stalled
// Redis that resumes runs what its clients sent before they gave up. The
// server's replies to such a client go nowhere. Without it (the default)
// such a request is dropped with its connection. It holds for the rest of
// the proxy's life.
func (p *SlowProxy) KeepRequests() { p.keep.Store(true) }

// Slowed returns how many chunks were held back by Delay, Stall or
// Trickle so far (a stall holds requests too): a test checks that its
// clients did call while the server was slow.
func (p *SlowProxy) Slowed() int64 { return p.slowed.Load() }

// Held returns the numbers of the chunks, requests or replies, held back
// now. A chunk keeps its number while it is held: one still held later
// was held all along, and a request or reply of a stall is held until
// the stall ends or the client gives up and closes its connection (a
// request, after KeepRequests, until the stall ends).
func (p *SlowProxy) Held() []uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.held))
}

// Passed returns how many reply chunks were written to clients so far.
func (p *SlowProxy) Passed() int64 { return p.passed.Load() }

func (p *SlowProxy) set(m proxyMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *SlowProxy) current() (proxyMode, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.changed
}

// Close stops accepting, cuts every connection and waits for the proxy's
// goroutines. It is safe to call twice.
func (p *SlowProxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.l.Close()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// track registers c to be closed by Close; false if the proxy is closed.
func (p *SlowProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *SlowProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *SlowProxy) accept() {
	for {
		client, err := p.l.Accept()
		if err != nil {
			return
		}
		if !p.track(client) {
			client.Close()
			return
		}
		p.wg.Go(func() { p.serve(client) })
	}
}

// serve pipes one client connection to the server and back until either
// side closes it.
func (p *SlowProxy) serve(client net.Conn) {
	defer p.untrack(client)
	server, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil || !p.track(server) {
		if server != nil {
			server.Close()
		}
		return
	}
	defer p.untrack(server)
	gone := make(chan struct{}) // closed when either side has ended
	var once sync.Once
	end := func() {
		once.Do(func() {
			close(gone)
			client.Close()
			server.Close()
		})
	}
	var wg sync.WaitGroup
	for _, d := range []struct {
		src, dst net.Conn
		replies  bool
	}{{client, server, false}, {server, client, true}} {
		ch := make(chan chunk, 1024)
		wg.Go(func() {
			read(d.src, ch, gone)
			if !d.replies && p.keep.Load() {
				close(ch) // its deliverer passes on what the client sent
				return
			}
			end()
		})
		wg.Go(func() {
			defer end()
			for {
				select {
				case c, ok := <-ch:
					if !ok {
						// The client closed after these requests: the
						// server sees their end and answers them (to
						// nobody) before the connection ends.
						if tc, isTCP := d.dst.(*net.TCPConn); isTCP {
							tc.CloseWrite()
						}
						<-gone
						return
					}
					if !p.deliver(d.dst, c, d.replies, gone) {
						return
					}
				case <-gone:
					return
				}
			}
		})
	}
	wg.Wait()
}

// chunk is what one read from a connection returned, and when.
type chunk struct {
	b  []byte
	at time.Time
}

// read reads src into ch until it fails or gone is closed.
func read(src net.Conn, ch chan<- chunk, gone <-chan struct{}) {
	for {
		buf := make([]byte, 32<<10)
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case ch <- chunk{buf[:n], time.Now()}:
			case <-gone:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// deliver writes c to dst as the mode says, following mode changes while
// it waits: a stall holds requests and replies, Delay and Trickle slow
// replies only. It reports false when the connection is gone.
func (p *SlowProxy) deliver(dst net.Conn, c chunk, reply bool, gone <-chan struct{}) bool {
	b := c.b
	var id uint64 // set while c is held back
	defer func() {
		if id != 0 {
			p.mu.Lock()
			delete(p.held, id)
			p.mu.Unlock()
		}
	}()
	for len(b) > 0 {
		m, changed := p.current()
		if !reply {
			m = proxyMode{stall: m.stall}
		}
		if m != (proxyMode{}) && id == 0 {
			p.slowed.Add(1)
			p.mu.Lock()
			p.nextID++
			id = p.nextID
			p.held[id] = true
			p.mu.Unlock()
		}
		switch {
		case m.stall:
			if !wait(-1, changed, gone) {
				return false
			}
		case m.delay > 0 && time.Until(c.at.Add(m.delay)) > 0:
			if !wait(time.Until(c.at.Add(m.delay)), changed, gone) {
				return false
			}
		case m.trickle > 0:
			if _, err := dst.Write(b[:1]); err != nil {
				return false
			}
			if b = b[1:]; len(b) > 0 && !wait(m.trickle, changed, gone) {
				return false
			}
		default:
			if _, err := dst.Write(b); err != nil {
				return false
			}
			b = nil
		}
	}
	if reply {
		p.passed.Add(1)
	}
	return true
}

// wait waits for d (d < 0: for ever) or until changed is closed; it
// reports false if gone is closed first.
func wait(d time.Duration, changed, gone <-chan struct{}) bool {
	var timeout <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-gone:
		return false
	case <-changed:
	case <-timeout:
	}
	return true
}
