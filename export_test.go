package muster

import "time"

// WithHTTPTimeouts makes the server's HTTP idle and body timeouts idle and
// body, short ones for tests.
func WithHTTPTimeouts(idle, body time.Duration) Option {
	return func(o *options) { o.idleTimeout, o.bodyTimeout = idle, body }
}
