package lobby

import (
	"fmt"
	"time"

	"github.com/muster-gg/muster/internal/defaults"
)

// Config configures a Module. The zero value of each field means its
// default.
type Config struct {
	// CodeLength is the length of the codes, 4 to 6. Default 5.
	CodeLength int `yaml:"code-length"`

	// MaxMembers is the most members a lobby holds, its host included, at
	// most MaxMembersLimit. Default 8.
	MaxMembers int `yaml:"max-members"`

	// RoomKind is the Kind of the rooms lobbies start. Default "lobby".
	RoomKind string `yaml:"room-kind"`

	// Tick is the interval of the module's housekeeping: joins waiting
	// for the move cooldown, members who never arrived, and hand-overs
	// while the server drains. Default 250ms.
	Tick time.Duration `yaml:"tick"`

	// ArrivalTimeout is how long a lobby moved by a drain keeps the place
	// of a member who has not arrived yet. Default 30s.
	ArrivalTimeout time.Duration `yaml:"arrival-timeout"`

	// CodeFailures is how many wrong lobby codes (malformed, or naming no
	// lobby) one client address may try in CodeLockout before its joins
	// are refused with ErrLocked until the window ends; an IPv6 client
	// counts by its /64, as in room.Limits. Counted once for the whole
	// fleet through its counter (in memory without a fleet), so codes
	// cannot be guessed by spreading tries over servers. A join counts
	// from before its code is looked at until it is known not to be
	// wrong, so joins sent at once on many connections get no more tries:
	// while an address's last try is in flight, its other joins are
	// refused too. Default 20.
	CodeFailures int `yaml:"code-failures"`

	// CodeLockout is the window of CodeFailures. Default 10m.
	CodeLockout time.Duration `yaml:"code-lockout"`
}

// MaxMembersLimit is the largest Config.MaxMembers: every join sends the
// member list to every member, and a match holds at most 1000 players, as
// a playlist's does.
const MaxMembersLimit = 1000

// DefaultConfig returns the documented defaults: what New uses for each
// zero field.
func DefaultConfig() Config {
	return Config{
		CodeLength: 5, MaxMembers: 8, RoomKind: "lobby",
		Tick: 250 * time.Millisecond, ArrivalTimeout: 30 * time.Second,
		CodeFailures: 20, CodeLockout: 10 * time.Minute,
	}
}

func (c Config) withDefaults() (Config, error) {
	defaults.Fill(&c, DefaultConfig())
	switch {
	case c.CodeLength < 4 || c.CodeLength > 6:
		return c, fmt.Errorf("%w: Config.CodeLength %d is outside 4-6", ErrConfig, c.CodeLength)
	case c.MaxMembers < 1 || c.MaxMembers > MaxMembersLimit:
		return c, fmt.Errorf("%w: Config.MaxMembers %d is outside 1-%d", ErrConfig, c.MaxMembers, MaxMembersLimit)
	case c.Tick < 0:
		return c, fmt.Errorf("%w: Config.Tick %v is negative", ErrConfig, c.Tick)
	case c.ArrivalTimeout < 0:
		return c, fmt.Errorf("%w: Config.ArrivalTimeout %v is negative", ErrConfig, c.ArrivalTimeout)
	case c.CodeFailures < 0:
		return c, fmt.Errorf("%w: Config.CodeFailures %d is negative (muster.lobby.code-failures, MUSTER__LOBBY__CODE_FAILURES)", ErrConfig, c.CodeFailures)
	case c.CodeLockout < 0:
		return c, fmt.Errorf("%w: Config.CodeLockout %v is negative (muster.lobby.code-lockout, MUSTER__LOBBY__CODE_LOCKOUT)", ErrConfig, c.CodeLockout)
	}
	return c, nil
}
