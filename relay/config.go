package relay

import (
	"fmt"
	"strings"
	"time"
)

// Defaults used for the zero fields of a Config.
const (
	DefaultNodeParam   = "node"
	DefaultDialTimeout = time.Second
	DefaultMaxSkew     = 30 * time.Second
	DefaultReadLimit   = 32 << 20 // 32 MiB
)

// minSecretLen is the shortest secret New accepts: a shorter one is a
// password, not an HMAC key.
const minSecretLen = 16

// Config configures a Relay. The zero value of every field except NodeID
// means its default; New copies the struct, so changing it afterwards has no
// effect.
type Config struct {
	// NodeID is this server's id in the fleet: requests naming it are served
	// locally, and only signatures made for it are accepted. Required.
	NodeID string `yaml:"node-id"`

	// NodeParam is the query parameter that names the target node, as in
	// /play?node=b7. Default "node".
	NodeParam string `yaml:"node-param"`

	// Secret is the key shared by every server of the fleet from which the
	// signing key for relayed client identity is derived. Default empty,
	// which disables the relay: nothing is relayed and relay headers are
	// stripped from every request. When set it must be at least 16 bytes.
	Secret string `yaml:"secret"`

	// DialTimeout bounds the connection to the target node and its
	// WebSocket handshake; a target that has not answered by then is given
	// up and the request served locally. Default 1s.
	DialTimeout time.Duration `yaml:"dial-timeout"`

	// MaxSkew is the freshness window of a signature: a relayed request
	// whose timestamp is further than this from the receiver's clock, in
	// either direction, is treated as unsigned. It must cover the clock
	// skew between servers. A receiver remembers the nonce of every header
	// set it accepted for twice MaxSkew, so that each is valid once.
	// Default 30s.
	MaxSkew time.Duration `yaml:"max-skew"`

	// ReadLimit is the largest message, in bytes, relayed in either
	// direction; a larger one closes the connection with 1009 (message too
	// big). Set it to at least the limit of the game's own WebSocket
	// handler, so that the relay never cuts a message a direct connection
	// would carry. -1 means no limit. Default 32 MiB.
	ReadLimit int64 `yaml:"read-limit"`
}

// withDefaults returns a copy of c with defaults filled in, or an error
// naming the first invalid field.
func (c Config) withDefaults() (Config, error) {
	if c.NodeParam == "" {
		c.NodeParam = DefaultNodeParam
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.MaxSkew == 0 {
		c.MaxSkew = DefaultMaxSkew
	}
	if c.ReadLimit == 0 {
		c.ReadLimit = DefaultReadLimit
	}
	switch {
	case strings.TrimSpace(c.NodeID) == "":
		return c, fmt.Errorf("%w: NodeID is required", ErrInvalidConfig)
	case strings.ContainsAny(c.NodeParam, "&=#?;+% \t\r\n"):
		return c, fmt.Errorf("%w: NodeParam %q is not a plain query parameter name", ErrInvalidConfig, c.NodeParam)
	case c.Secret != "" && len(c.Secret) < minSecretLen:
		return c, fmt.Errorf("%w: Secret must be at least %d bytes", ErrInvalidConfig, minSecretLen)
	case c.DialTimeout < 0:
		return c, fmt.Errorf("%w: DialTimeout %v is negative", ErrInvalidConfig, c.DialTimeout)
	case c.MaxSkew < 0:
		return c, fmt.Errorf("%w: MaxSkew %v is negative", ErrInvalidConfig, c.MaxSkew)
	case c.ReadLimit < -1:
		return c, fmt.Errorf("%w: ReadLimit %d is below -1", ErrInvalidConfig, c.ReadLimit)
	}
	return c, nil
}
