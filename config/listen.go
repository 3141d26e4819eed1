package config

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
)

// Addr returns the address to listen on: muster.server.http.host and
// port, such as "0.0.0.0:8080".
func (c Config) Addr() string {
	return net.JoinHostPort(c.Server.HTTP.Host, strconv.Itoa(c.Server.HTTP.Port))
}

// OperatorAddr returns the address of the operator's port:
// muster.server.http.host and operator-port, such as "0.0.0.0:9090"; ""
// when operator-port is 0.
func (c Config) OperatorAddr() string {
	if c.Server.HTTP.OperatorPort == 0 {
		return ""
	}
	return net.JoinHostPort(c.Server.HTTP.Host, strconv.Itoa(c.Server.HTTP.OperatorPort))
}

// Listen listens on Addr. A port already in use, or one the process may
// not bind, is an *Error that names muster.server.http.port and
// MUSTER__SERVER__HTTP__PORT; a host name that does not exist, or an
// address not of this machine, is one that names muster.server.http.host
// and its variable: the one line at start-up says what to change.
func (c Config) Listen(ctx context.Context) (net.Listener, error) {
	return c.listen(ctx, "muster.server.http.port", c.Server.HTTP.Port)
}

// ListenOperator listens on OperatorAddr, with errors as Listen's that
// name muster.server.http.operator-port and its variable for the port.
// It is an error to call it with operator-port 0.
func (c Config) ListenOperator(ctx context.Context) (net.Listener, error) {
	if c.Server.HTTP.OperatorPort == 0 {
		return nil, errors.New("config: ListenOperator: muster.server.http.operator-port is 0")
	}
	return c.listen(ctx, "muster.server.http.operator-port", c.Server.HTTP.OperatorPort)
}

func (c Config) listen(ctx context.Context, portKey string, port int) (net.Listener, error) {
	addr := net.JoinHostPort(c.Server.HTTP.Host, strconv.Itoa(port))
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	var dnsErr *net.DNSError
	switch {
	case err == nil:
		return l, nil
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound && ctx.Err() == nil:
		// Only a name that does not exist: a resolver that timed out,
		// failed or was canceled says nothing of the setting.
		return nil, &Error{Key: "muster.server.http.host", Err: ErrInvalid,
			Problem: fmt.Sprintf("%s does not resolve to an address (%s); set a host name or IP address of this machine", quote(c.Server.HTTP.Host), dnsErr.Err)}
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, &Error{Key: portKey, Err: ErrInvalid,
			Problem: fmt.Sprintf("port %d is in use on %s (another server running?); choose another port", port, hostOrAll(c.Server.HTTP.Host))}
	case errors.Is(err, syscall.EACCES):
		return nil, &Error{Key: portKey, Err: ErrInvalid,
			Problem: fmt.Sprintf("port %d may not be bound by this process (below 1024?); choose another port", port)}
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return nil, &Error{Key: "muster.server.http.host", Err: ErrInvalid,
			Problem: fmt.Sprintf("%s is not an address of this machine", quote(c.Server.HTTP.Host))}
	}
	return nil, fmt.Errorf("config: listen on %s: %w", addr, err)
}

// URL returns a URL to open for a server listening at addr: with an
// unspecified address (0.0.0.0, ::) it names localhost, such as
// "http://localhost:8080".
func URL(addr net.Addr) string {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	host := ap.Addr().Unmap().String()
	if ap.Addr().IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(int(ap.Port())))
}

func hostOrAll(h string) string {
	if h == "" || h == "0.0.0.0" || h == "::" {
		return "every interface"
	}
	return h
}
