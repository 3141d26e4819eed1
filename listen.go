package muster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"syscall"

	"github.com/muster-gg/muster/config"
)

// listen listens on muster.server.http's host and port. A port already in
// use, or one the process may not bind, is a *config.Error that names
// muster.server.http.port and MUSTER__SERVER__HTTP__PORT; a host name that
// does not exist, or an address not of this machine, is one that names
// muster.server.http.host and its variable: the one line at start-up says
// what to change.
func listen(ctx context.Context, c config.Config) (net.Listener, error) {
	return listenOn(ctx, c.Server.HTTP.Host, "muster.server.http.port", c.Server.HTTP.Port)
}

// listenOperator listens on muster.server.http.operator-port of the host,
// with errors as listen's that name operator-port and its variable for the
// port. It is an error to call it with operator-port 0.
func listenOperator(ctx context.Context, c config.Config) (net.Listener, error) {
	if c.Server.HTTP.OperatorPort == 0 {
		return nil, errors.New("muster: listenOperator: muster.server.http.operator-port is 0")
	}
	return listenOn(ctx, c.Server.HTTP.Host, "muster.server.http.operator-port", c.Server.HTTP.OperatorPort)
}

// listenOn listens on host and port, the value of portKey.
func listenOn(ctx context.Context, host, portKey string, port int) (net.Listener, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	var dnsErr *net.DNSError
	switch {
	case err == nil:
		return l, nil
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound && ctx.Err() == nil:
		// Only a name that does not exist: a resolver that timed out,
		// failed or was canceled says nothing of the setting.
		return nil, config.Invalid("muster.server.http.host",
			fmt.Sprintf("%s does not resolve to an address (%s); set a host name or IP address of this machine", quote(host), dnsErr.Err))
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, config.Invalid(portKey,
			fmt.Sprintf("port %d is in use on %s (another server running?); choose another port", port, hostOrAll(host)))
	case errors.Is(err, syscall.EACCES):
		return nil, config.Invalid(portKey,
			fmt.Sprintf("port %d may not be bound by this process (below 1024?); choose another port", port))
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return nil, config.Invalid("muster.server.http.host", fmt.Sprintf("%s is not an address of this machine", quote(host)))
	}
	return nil, fmt.Errorf("muster: listen on %s: %w", addr, err)
}

// hostOrAll names the host to listen on for a message.
func hostOrAll(h string) string {
	if h == "" || h == "0.0.0.0" || h == "::" {
		return "every interface"
	}
	return h
}

// localURL is the URL a developer opens for a server listening on addr.
func localURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + "/"
	}
	// localhost is the wildcard's and the usual loopback address's name;
	// another loopback address, as each server of a fleet on one machine
	// has, is reached only by its own.
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() || ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback) {
		host = "localhost"
	}
	return (&url.URL{Scheme: "http", Host: net.JoinHostPort(host, port), Path: "/"}).String()
}
