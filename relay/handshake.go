package relay

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
)

// upstream is the dialled half of a relayed connection, its handshake done.
type upstream struct {
	conn        net.Conn
	data        []byte      // what the node sent after its handshake response
	header      http.Header // the node's handshake response headers
	subprotocol string
}

// maxHandshake bounds the node's handshake response.
const maxHandshake = 64 << 10

// maxRefusalBody bounds the body of a node's refusal passed on to the
// client; the rest is left unread.
const maxRefusalBody = 4 << 10

// refusal is a node's 4xx answer to a relayed upgrade: its refusal of the
// client, for the client's request (an Origin, an address over its limit,
// a bad ticket), which is passed on to the client rather than counted as a
// failure of the node.
type refusal struct {
	status int
	header http.Header
	body   []byte
}

func (e *refusal) Error() string {
	return fmt.Sprintf("relay: the node refused the client with %d %s", e.status, http.StatusText(e.status))
}

// write answers the client with the node's refusal.
func (e *refusal) write(w http.ResponseWriter) {
	copyResponseHeaders(w.Header(), e.header)
	w.WriteHeader(e.status)
	_, _ = w.Write(e.body)
}

// dial opens the upstream half of a relayed connection: the client's
// upgrade request, with its end-to-end headers and subprotocols, plus the
// signed identity, sent to the target node's internal address. Only addr
// is dialled, whatever the request says. Its phases: upgradeRequest
// builds the request, handshake sends it and reads the node's answer
// within DialTimeout, and checkUpgrade checks that answer.
func (rl *Relay) dial(r *http.Request, target, addr string, client netip.AddrPort) (_ upstream, err error) {
	req, key, offered, err := rl.upgradeRequest(r, target, addr, client)
	if err != nil {
		return upstream{}, err
	}
	ctx, cancel := context.WithTimeout(r.Context(), rl.cfg.DialTimeout)
	defer cancel()
	conn, err := rl.dialNet(ctx, "tcp", addr)
	if err != nil {
		return upstream{}, err
	}
	defer func() {
		if err != nil {
			_ = conn.Close()
		}
	}()
	br, resp, err := handshake(ctx, conn, req)
	if err != nil {
		return upstream{}, err
	}
	proto, err := checkUpgrade(resp, key, offered)
	if err != nil {
		return upstream{}, err
	}
	data, _ := br.Peek(br.Buffered())
	return upstream{conn: conn, data: data, header: resp.Header, subprotocol: proto}, nil
}

// upgradeRequest returns the upgrade request dial sends to the node at
// addr, the Sec-WebSocket-Key it carries, and the subprotocols the client
// offered, which it offers on.
func (rl *Relay) upgradeRequest(r *http.Request, target, addr string, client netip.AddrPort) (req *http.Request, key string, offered []string, err error) {
	s := sign(rl.key, client, ClientScheme(r), r.Host, target, r.URL.Path, rl.now())
	h := forwardHeaders(r.Header)
	s.setHeaders(h)
	// As a proxy does, append the address this server saw: a node whose
	// RealIP trusts this server then takes the client's address even
	// without the signature (a clock past MaxSkew), never one the client
	// wrote.
	if prior := h.Values("X-Forwarded-For"); len(prior) > 0 {
		h.Set("X-Forwarded-For", strings.Join(prior, ", ")+", "+client.Addr().String())
	} else {
		h.Set("X-Forwarded-For", client.Addr().String())
	}
	u, err := upstreamURL(addr, r.URL)
	if err != nil {
		return nil, "", nil, err
	}
	req, err = http.NewRequest(http.MethodGet, "http"+strings.TrimPrefix(u, "ws"), nil)
	if err != nil {
		return nil, "", nil, err
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	key = base64.StdEncoding.EncodeToString(nonce[:])
	h.Set("Upgrade", "websocket")
	h.Set("Connection", "Upgrade")
	h.Set("Sec-WebSocket-Version", "13")
	h.Set("Sec-WebSocket-Key", key)
	offered = subprotocols(r.Header)
	if len(offered) > 0 {
		h.Set("Sec-WebSocket-Protocol", strings.Join(offered, ", "))
	}
	req.Header = h
	req.Host = r.Host
	return req, key, offered, nil
}

// handshake sends req on conn and reads the node's response, both bounded
// by ctx. A 4xx answer is returned as a *refusal with up to
// maxRefusalBody bytes of its body. br holds what the node sent after its
// response.
func handshake(ctx context.Context, conn net.Conn, req *http.Request) (br *bufio.Reader, resp *http.Response, err error) {
	// The handshake is bounded by ctx: when it ends, the deadline ends
	// any read or write in progress.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	if err := req.Write(conn); err != nil {
		stop()
		return nil, nil, err
	}
	br = bufio.NewReader(io.LimitReader(conn, maxHandshake))
	resp, err = http.ReadResponse(br, req)
	var refused *refusal
	if err == nil && resp.StatusCode >= 400 && resp.StatusCode < 500 {
		// Read while ctx still bounds the read: a node that sends less
		// body than it announced is given up at DialTimeout.
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBody))
		err = rerr
		refused = &refusal{status: resp.StatusCode, header: resp.Header, body: body}
	}
	if !stop() {
		return nil, nil, fmt.Errorf("relay: handshake with the node: %w", context.Cause(ctx))
	}
	if err != nil {
		return nil, nil, err
	}
	if refused != nil {
		return nil, nil, refused
	}
	_ = conn.SetDeadline(time.Time{})
	return br, resp, nil
}

// checkUpgrade checks the node's response to an upgrade request that
// carried key and offered the subprotocols offered, and returns the
// subprotocol the node chose, if any.
func checkUpgrade(resp *http.Response, key string, offered []string) (string, error) {
	// Each field is one line: two lines mean the two values joined by a
	// comma (RFC 9110, section 5.3), which is no accept key and no one
	// subprotocol.
	accepts, protos := resp.Header.Values("Sec-WebSocket-Accept"), resp.Header.Values("Sec-WebSocket-Protocol")
	proto := resp.Header.Get("Sec-WebSocket-Protocol")
	switch {
	case resp.StatusCode != http.StatusSwitchingProtocols:
		return "", fmt.Errorf("relay: the node answered the upgrade with %s", resp.Status)
	case !headerHasToken(resp.Header, "Upgrade", "websocket") || !headerHasToken(resp.Header, "Connection", "upgrade"):
		return "", errors.New("relay: the node's handshake response is not an upgrade")
	case len(accepts) != 1 || accepts[0] != acceptKey(key):
		return "", errors.New("relay: the node's Sec-WebSocket-Accept is wrong")
	case len(resp.Header.Values("Sec-WebSocket-Extensions")) > 0:
		return "", errors.New("relay: the node chose an extension that was not offered")
	case len(protos) > 1:
		return "", fmt.Errorf("relay: the node chose subprotocols %q, not one", protos)
	case proto != "" && !slices.Contains(offered, proto):
		return "", fmt.Errorf("relay: the node chose subprotocol %q, which was not offered", proto)
	}
	return proto, nil
}

// accept completes the client's handshake with what the node answered, and
// returns the client's connection and what it sent after its request.
func accept(w http.ResponseWriter, r *http.Request, up upstream) (net.Conn, []byte, error) {
	h := w.Header()
	copyResponseHeaders(h, up.header)
	h.Set("Upgrade", "websocket")
	h.Set("Connection", "Upgrade")
	h.Set("Sec-WebSocket-Accept", acceptKey(strings.TrimSpace(r.Header.Get("Sec-WebSocket-Key"))))
	if up.subprotocol != "" {
		h.Set("Sec-WebSocket-Protocol", up.subprotocol)
	}
	w.WriteHeader(http.StatusSwitchingProtocols)
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	data, _ := brw.Reader.Peek(brw.Reader.Buffered())
	return c, data, nil
}

// upstreamURL returns the URL of the relayed request: the node's internal
// address with the path and query of the client's request, built from
// parts, so that nothing in the request can change the host. It checks
// the result as the WebSocket library will read it.
func upstreamURL(addr string, in *url.URL) (string, error) {
	u := url.URL{Scheme: "ws", Host: addr, Path: in.Path, RawPath: in.RawPath, RawQuery: in.RawQuery}
	s := u.String()
	back, err := url.Parse(s)
	if err != nil || back.Host != addr || back.User != nil || back.Opaque != "" {
		return "", fmt.Errorf("relay: request path would change the node address %q", addr)
	}
	return s, nil
}
