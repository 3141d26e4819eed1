package fleet

import (
	"fmt"
	"net"
	"strings"
	"time"
	"unicode"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/internal/defaults"
)

// Config configures a Fleet. The zero value of each field means its
// default.
type Config struct {
	// NodeID identifies this server in its cluster. Required.
	NodeID string `yaml:"node-id"`

	// Cluster is the name of the fleet, published with the record. The
	// backplane is already bound to it. Default "default".
	Cluster string `yaml:"cluster"`

	// Region is published with the record. Default "".
	Region string `yaml:"region"`

	// InternalAddress is where the other servers reach this one
	// (host:port). Default "", which means the relay cannot reach it.
	InternalAddress string `yaml:"internal-address"`

	// PublicAddress is where clients reach this server directly, when it
	// has an address of its own. Default "".
	PublicAddress string `yaml:"public-address"`

	// NodeParam is the query parameter that names a server in a client's
	// URL (?node=id). Default "node".
	NodeParam string `yaml:"node-param"`

	// Heartbeat is the interval between records; a server missing three
	// heartbeats is gone. At most MaxHeartbeat. Default 2s.
	Heartbeat time.Duration `yaml:"heartbeat"`

	// CallTimeout bounds every backplane call. Default a quarter of the
	// heartbeat.
	CallTimeout time.Duration `yaml:"call-timeout"`

	// MaxLoad is the load budget; at MaxLoad the server is full. Default 200.
	MaxLoad int `yaml:"max-load"`

	// LoadStep is how far the load must move before the published load
	// changes, so that a record does not change at every heartbeat and the
	// others need not read it again (the state, ready or full, is always
	// exact, and so is the load at 0 and within a step of MaxLoad).
	// Default MaxLoad/20, at least 1; -1 publishes the exact load.
	LoadStep int `yaml:"load-step"`

	// DrainTimeout bounds a drain: then the remaining work is told and
	// ended. Default 30s.
	DrainTimeout time.Duration `yaml:"drain-timeout"`

	// DrainToken lets POST /muster/server/drain come from a non-loopback
	// address with "Authorization: Bearer <token>". Default "": loopback
	// only.
	DrainToken string `yaml:"drain-token"`

	// Key is the security key (muster.security.key). When set, every
	// record is signed with an HMAC under a key derived from it, and
	// records that are unsigned or signed with another key are dropped
	// from the view (counted by RejectedRecords): only a server that holds
	// the key can join the view or name an address to relay to. Default
	// none: records are neither signed nor checked, for a single server
	// or a trusted backplane.
	Key []byte `yaml:"-"`
}

// MissedHeartbeats is how many heartbeats a server may miss before it is
// gone from every view.
const MissedHeartbeats = 3

// HandoffTTL is how long an untaken handoff lives.
const HandoffTTL = 60 * time.Second

// MaxHeartbeat is the longest Config.Heartbeat: a record lives a multiple
// of the heartbeat, which must not wrap round. (config.yml allows at most
// a minute: a server is gone after MissedHeartbeats missed ones, and
// longer would take minutes to notice a dead server.)
const MaxHeartbeat = time.Hour

// DefaultConfig returns the documented defaults: what New uses for each
// zero field. NodeID has none and is required; CallTimeout and LoadStep
// stay zero, as New derives them from Heartbeat and MaxLoad.
func DefaultConfig() Config {
	return Config{
		Cluster: "default", NodeParam: "node", Heartbeat: 2 * time.Second,
		MaxLoad: 200, DrainTimeout: 30 * time.Second,
	}
}

// CallBound is the bound of every backplane call: CallTimeout, or else a
// quarter of the heartbeat (DefaultConfig's, when Heartbeat is unset).
func (c Config) CallBound() time.Duration {
	if c.CallTimeout > 0 {
		return c.CallTimeout
	}
	hb := c.Heartbeat
	if hb <= 0 {
		hb = DefaultConfig().Heartbeat
	}
	return hb / 4
}

func (c Config) withDefaults() (Config, error) {
	defaults.Fill(&c, DefaultConfig())
	c.CallTimeout = c.CallBound()
	if c.LoadStep == 0 {
		c.LoadStep = max(1, c.MaxLoad/20)
	}
	switch {
	case c.NodeID == "":
		return c, fmt.Errorf("%w: Config.NodeID is required", ErrConfig)
	case ValidateNodeID(c.NodeID) != nil:
		return c, fmt.Errorf("%w: Config.NodeID: %w", ErrConfig, ValidateNodeID(c.NodeID))
	case c.Heartbeat < 0 || c.Heartbeat > MaxHeartbeat:
		return c, fmt.Errorf("%w: Config.Heartbeat %v is outside 0-%v", ErrConfig, c.Heartbeat, MaxHeartbeat)
	case c.CallTimeout < 0 || c.CallTimeout >= c.Heartbeat:
		return c, fmt.Errorf("%w: Config.CallTimeout %v must be positive and below the heartbeat %v", ErrConfig, c.CallTimeout, c.Heartbeat)
	case c.MaxLoad < 0:
		return c, fmt.Errorf("%w: Config.MaxLoad %d is negative", ErrConfig, c.MaxLoad)
	case c.LoadStep < -1:
		return c, fmt.Errorf("%w: Config.LoadStep %d is below -1", ErrConfig, c.LoadStep)
	case c.DrainTimeout < 0 || c.DrainTimeout > 24*time.Hour:
		return c, fmt.Errorf("%w: Config.DrainTimeout %v is outside 0-24h", ErrConfig, c.DrainTimeout)
	}
	if c.InternalAddress != "" {
		if _, _, err := net.SplitHostPort(c.InternalAddress); err != nil {
			return c, fmt.Errorf("%w: Config.InternalAddress: %w", ErrConfig, err)
		}
	}
	return c, nil
}

// ValidateNodeID reports whether id can name a server: the backplane's
// rule for names (at most 256 bytes, without { } : or NUL), and no space
// or control character, as node ids are written into logs, URLs and the
// other servers' views.
func ValidateNodeID(id string) error {
	if err := backplane.ValidateName("node id", id); err != nil {
		return err
	}
	if strings.ContainsFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || !unicode.IsPrint(r) }) {
		return fmt.Errorf("node id %q contains a space or a control character", id)
	}
	return nil
}
