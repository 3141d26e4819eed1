package redis

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// clusterReload is how old a Redis Cluster's slot map may grow before a
// call reloads it; a failed call reloads it at once. go-redis's default of
// a minute left a fleet detached that long after a master failed over.
const clusterReload = time.Second

// DefaultTimeout is Config.Timeout's default.
const DefaultTimeout = 500 * time.Millisecond

// TLSFileError is a TLS file of a Config that cannot be used, or one given
// for an address without TLS.
type TLSFileError struct {
	Field string // the Config field: "TLSCAFile", "TLSCertFile" or "TLSKeyFile"
	Path  string // the file
	Err   error  // what is wrong
}

// Error returns "backplane/redis: <field> <path>: <problem>".
func (e *TLSFileError) Error() string {
	return fmt.Sprintf("backplane/redis: %s %q: %v", e.Field, e.Path, e.Err)
}

// Unwrap returns what is wrong.
func (e *TLSFileError) Unwrap() error { return e.Err }

// Check reports whether Open would accept cfg, reading the TLS files: an
// *AddressError for the URL, a *TLSFileError for a TLS file. It dials
// nothing.
func (c Config) Check() error {
	a, err := ParseAddress(c.URL)
	if err != nil {
		return err
	}
	_, err = c.tlsConfig(a)
	return err
}

// tlsConfig returns the TLS configuration for a: the address's, with the
// configured CA and client certificate; nil without TLS.
func (c Config) tlsConfig(a *Address) (*tls.Config, error) {
	base := a.tlsConfig()
	if base == nil {
		for _, f := range []struct{ field, path string }{
			{"TLSCAFile", c.TLSCAFile}, {"TLSCertFile", c.TLSCertFile}, {"TLSKeyFile", c.TLSKeyFile},
		} {
			if f.path != "" {
				return nil, &TLSFileError{Field: f.field, Path: f.path, Err: errors.New("given, but the address does not use TLS: write rediss://")}
			}
		}
		return nil, nil
	}
	t := base.Clone()
	if t.MinVersion == 0 {
		t.MinVersion = tls.VersionTLS12
	}
	if c.TLSCAFile != "" {
		pem, err := os.ReadFile(c.TLSCAFile)
		if err != nil {
			return nil, &TLSFileError{Field: "TLSCAFile", Path: c.TLSCAFile, Err: unwrapPath(err)}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &TLSFileError{Field: "TLSCAFile", Path: c.TLSCAFile, Err: errors.New("no PEM certificate in it")}
		}
		t.RootCAs = pool
	}
	switch {
	case c.TLSCertFile == "" && c.TLSKeyFile != "":
		return nil, &TLSFileError{Field: "TLSKeyFile", Path: c.TLSKeyFile, Err: errors.New("given without a certificate file")}
	case c.TLSCertFile != "" && c.TLSKeyFile == "":
		return nil, &TLSFileError{Field: "TLSCertFile", Path: c.TLSCertFile, Err: errors.New("given without a key file")}
	case c.TLSCertFile != "":
		if _, err := os.Stat(c.TLSKeyFile); err != nil {
			return nil, &TLSFileError{Field: "TLSKeyFile", Path: c.TLSKeyFile, Err: unwrapPath(err)}
		}
		cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
		if err != nil {
			return nil, &TLSFileError{Field: "TLSCertFile", Path: c.TLSCertFile, Err: unwrapPath(err)}
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}

// unwrapPath drops the path an *os.PathError repeats.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// newClient makes the client for a with the control-plane options: each
// default below applies only where the address's query did not set it.
func newClient(a *Address, cfg Config) (goredis.UniversalClient, error) {
	tlsCfg, err := cfg.tlsConfig(a)
	if err != nil {
		return nil, err
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	dial := func(dialTimeout time.Duration) Dialer {
		d := dialer(dialTimeout, tlsCfg)
		if cfg.dial != nil {
			d = cfg.dial(d)
		}
		return d
	}
	switch a.Kind {
	case Sentinel:
		o := *a.failover
		a.controlPlane(timeout, shared{&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.PoolTimeout,
			&o.MaxRetries, &o.DialerRetries, &o.ContextTimeoutEnabled, &o.DisableIdentity})
		o.SentinelAddrs = append([]string(nil), o.SentinelAddrs...)
		o.TLSConfig, o.Dialer = tlsCfg, dial(o.DialTimeout)
		return goredis.NewFailoverClient(&o), nil
	case Cluster:
		o := *a.cluster
		a.controlPlane(timeout, shared{&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.PoolTimeout,
			&o.MaxRetries, &o.DialerRetries, &o.ContextTimeoutEnabled, &o.DisableIdentity})
		// The routing policies need the command table, which go-redis
		// loads with a context of its own (5 s), past any call's deadline
		// while the cluster is away. Every key of a fleet shares one hash
		// tag, so plain slot routing is all the backplane needs.
		o.DisableRoutingPolicies = true
		o.ClusterStateReloadInterval = clusterReload
		o.Addrs = append([]string(nil), o.Addrs...)
		o.TLSConfig, o.Dialer = tlsCfg, dial(o.DialTimeout)
		c := goredis.NewClusterClient(&o)
		c.AddHook(reloadOnError{c})
		return c, nil
	default:
		o := *a.single
		a.controlPlane(timeout, shared{&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.PoolTimeout,
			&o.MaxRetries, &o.DialerRetries, &o.ContextTimeoutEnabled, &o.DisableIdentity})
		o.TLSConfig, o.Dialer = tlsCfg, dial(o.DialTimeout)
		return goredis.NewClient(&o), nil
	}
}

// shared points at the options the three kinds of client share.
type shared struct {
	dial, read, write, pool         *time.Duration
	maxRetries, dialerRetries       *int
	contextTimeout, disableIdentity *bool
}

// controlPlane sets the control-plane defaults in o where the address's
// query did not set them: every timeout the call timeout, no retries, one
// dial attempt, deadlines from the call's context, no CLIENT SETINFO.
func (a *Address) controlPlane(timeout time.Duration, o shared) {
	for param, d := range map[string]*time.Duration{
		"dial_timeout": o.dial, "read_timeout": o.read, "write_timeout": o.write, "pool_timeout": o.pool,
	} {
		if !a.set[param] {
			*d = timeout
		}
	}
	if !a.set["max_retries"] {
		*o.maxRetries = -1
	}
	if !a.set["dialer_retries"] {
		*o.dialerRetries = 1
	}
	if !a.set["context_timeout_enabled"] {
		*o.contextTimeout = true
	}
	if !a.set["disableIdentity"] {
		*o.disableIdentity = true
	}
}

// dialer dials TCP or a Unix socket, with TLS when tlsCfg is set; unlike
// go-redis's own, its TLS handshake stops at the context's deadline.
func dialer(timeout time.Duration, tlsCfg *tls.Config) Dialer {
	nd := &net.Dialer{Timeout: max(timeout, 0), KeepAlive: 30 * time.Second}
	if tlsCfg == nil {
		return nd.DialContext
	}
	td := &tls.Dialer{NetDialer: nd, Config: tlsCfg}
	return td.DialContext
}

// reloadOnError reloads a Redis Cluster's slot map after a call fails in a
// way that a changed topology explains: a redirect, a cluster-state error,
// or no answer at all (a dead master). go-redis reloads on MOVED only.
type reloadOnError struct{ c *goredis.ClusterClient }

func (h reloadOnError) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h reloadOnError) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		err := next(ctx, cmd)
		if topologyError(err) {
			h.c.ReloadState(ctx)
		}
		return err
	}
}

func (h reloadOnError) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		err := next(ctx, cmds)
		if topologyError(err) {
			h.c.ReloadState(ctx)
		}
		return err
	}
}

// topologyError reports whether err may mean the cluster's slot map is out
// of date.
func topologyError(err error) bool {
	if err == nil || errors.Is(err, goredis.Nil) || errors.Is(err, goredis.ErrClosed) {
		return false
	}
	var re goredis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		for _, p := range []string{"MOVED ", "ASK ", "CLUSTERDOWN", "TRYAGAIN", "READONLY", "LOADING", "MASTERDOWN"} {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return false
	}
	return true // no answer: a dead node, a timeout, a refused dial
}
