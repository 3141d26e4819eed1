// Package relay gives a fleet of game servers one public address: a player
// who reaches any server with a WebSocket upgrade naming another server,
// as in wss://play.example.com/play?node=b7, is connected to that server
// through the one it reached.
//
// # How it works
//
// Middleware wraps a server's routes. For a WebSocket upgrade whose node
// query parameter (Config.NodeParam) names another live server, it dials
// that server's internal address (found through the Directory the caller
// provides, normally the fleet's view), and once that server has accepted
// the upgrade it accepts the client with the same subprotocol and relays
// messages both ways, each with its type (text or binary), of any size up
// to Config.ReadLimit, and the close code and reason of whichever side
// closes first (a close without a status is passed on without one). A side
// that drops without a close frame, or dies in the middle of a message, is
// reported to the other as 1001 (going away); a message above the read
// limit gets its sender 1009 (message too big) and the other side 1001.
// A side that reads nothing for a minute while the relay has frames to
// write to it (its TCP window stays shut) is taken to have dropped, as
// nginx's send_timeout does, so that it cannot hold a connection, and
// what the relay keeps for it, after the other side has given up.
// Pings are answered hop by hop; when the node
// pings, the relay also pings the client, so that a client that has
// silently vanished is reported to the node as 1001 instead of being kept
// alive by the relay's answers.
//
// The relay does both handshakes itself and then copies frames, not
// messages: each direction reads whatever has arrived into a 64 KiB buffer,
// parses only the frame headers in it (for message boundaries, the read
// limit, and the control frames it answers or passes on), and writes every
// whole data frame on as it came, client masks included, in one write. A
// frame longer than the buffer goes on in pieces, each a frame of its own,
// so that the far side is always at a frame boundary when a close frame
// has to be sent. Nothing is allocated per message, and no extension
// (compression) is negotiated on either side. On Linux, plain TCP
// connections are read with recvmsg and TCP_INQ, which says when the
// socket is drained (so the relay waits for the poller without the read
// that returns EAGAIN), and both reads and writes are raw system calls on
// the non-blocking sockets (so they do not wake the Go runtime's monitor
// thread after every pause): one read and one write per message.
//
// On Linux the frames of plain TCP connections are relayed by the Relay's
// event loops rather than by a goroutine per direction: each loop waits on
// an epoll instance of its own for every connection it relays, and, once
// woken, reads every socket that is ready and writes what it read on, as
// nginx's workers do, so that one wake-up and one epoll_wait serve many
// messages. A loop never waits inside a connection: a peer whose socket
// is full, a close frame, an error or Close hands that connection back to
// a goroutine per direction, which carries on where the loop stopped. A
// Relay runs one loop for every two Ps (GOMAXPROCS), and a loop runs only
// while it has connections. While each wake-up finds one socket ready, as
// with a few busy players, a loop sleeps in epoll_wait itself, as nginx's
// worker does, so that its thread goes to sleep as soon as it has written
// and wakes straight from the kernel; it holds a P meanwhile, so the Relay
// raises GOMAXPROCS by one for it, and lowers it again once the loop
// waits in Go's poller (busier traffic) or ends: the server's rooms and
// players keep every P they had. A process with GOMAXPROCS 1 lends none.
// A GOMAXPROCS set by the program while one is lent is left as set: the
// loops go back to Go's poller, and a second later may have a P lent on
// top of the new value. Note that runtime.GOMAXPROCS(0)
// counts a lent P, so a program that saves the value while one is lent
// and sets it back later keeps that P.
// Like any call of runtime.GOMAXPROCS, the first one ends the runtime's
// own updates of GOMAXPROCS when a container's CPU limit changes while
// the process runs.
//
// The node is dialled at its internal address with the path and query of
// the client's request, put together from parts: an upgrade naming another
// node whose request line is not a plain path (an absolute URL, user info,
// an opaque form such as x:@host/play) is refused with 400 and nothing is
// dialled, so no request can steer the relay to another host.
//
// A 4xx answer of the node to the relayed upgrade is its refusal of the
// client (403 for an Origin it does not accept, 429 for an address over
// its connection limit): it is passed on to the client as the node's
// answer, counted in Stats.Refused, and neither logged as a failure of
// the node nor served locally.
//
// A relayed connection is held on this server as much as one it serves:
// with an OpenLimit (LimitOpen; the room host's cap of open connections
// per address), the relay counts it there by the client's address from
// before the dial until the session ends, and answers a client over the
// cap 429 before dialling anything (Stats.OverOpen), so that steering to
// other servers does not multiply the cap.
//
// Every other request, and every upgrade for this server, an unknown or
// dead server, one that does not answer within Config.DialTimeout, or one
// that answers anything but 101 or a 4xx (such as a draining server's
// 503), is served by the wrapped handler: a node that fails never costs
// the client its connection. Such a failure of the node is logged as a
// warning at most once a minute for each node, with the number of
// failures not logged since the last line.
//
// # Client identity
//
// The relaying server signs what it knows of the client — the address it
// resolved from r.RemoteAddr (put RealIP in front of the relay when behind
// a load balancer; PeerAddr keeps the TCP peer for rights that belong to
// the connection, such as loopback-only endpoints), the scheme
// and the Host — together with the target node id, the request path, a
// timestamp and a random nonce, with HMAC-SHA256 under a key derived from
// Config.Secret. The receiving server removes every Muster-Relay-* header
// from every request before anything else sees it, and only when the
// signature is valid, made for this node and this path, and within
// Config.MaxSkew of its own clock does it restore r.RemoteAddr and r.Host
// and record the scheme (see FromRelay and ClientScheme). Rate limits, bans
// and IP-bound tickets then work the same behind the relay. A header set is
// valid once: the receiving server remembers its nonce for twice MaxSkew,
// so a captured set sent again, with the same request or another query, is
// served as a request from whoever sent it. With no secret nothing is relayed
// and relay headers are always stripped. The relay also appends the
// client's address to X-Forwarded-For, as a proxy does, so that a node
// whose RealIP trusts the relaying server never takes an address the
// client wrote.
//
// # Lifecycle and concurrency
//
// New only builds the Relay; nothing runs until a request arrives. Each
// relayed connection runs in the goroutine of the HTTP handler that accepted
// it (which waits while the connection is on an event loop) plus, off the
// loop, one pump goroutine, all owned by the Relay. Because relayed
// connections are hijacked, http.Server.Shutdown neither waits for them nor
// closes them: the owner of the Relay calls Shutdown (let them finish, then
// close what is left) or Close (close them now, each side with 1001) when
// the server stops; both return only when every relayed connection and
// goroutine has ended, and both may be called more than once.
//
// A Relay is safe for concurrent use. Its counters are read with Stats.
package relay
