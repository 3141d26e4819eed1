package relay

import "errors"

var (
	// ErrInvalidConfig is wrapped by the error New returns for a Config it
	// cannot use; the message names the field.
	ErrInvalidConfig = errors.New("relay: invalid config")
)

// Reasons why the relay headers of an incoming request are ignored. They are
// not returned by any exported function; they appear in debug logs and
// tests.
var (
	errUnsigned     = errors.New("relay: no relay headers")
	errMalformed    = errors.New("relay: malformed relay headers")
	errBadSignature = errors.New("relay: bad signature")
	errWrongTarget  = errors.New("relay: signed for another node")
	errStale        = errors.New("relay: signature outside the freshness window")
	errReplayed     = errors.New("relay: relay headers used before")
	errTooMany      = errors.New("relay: too many relay headers to remember")
)
