package config

import (
	"cmp"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Room is muster.room: the room host (room.Config, whose fields and
// defaults these mirror). The ticket key is muster.security.key.
type Room struct {
	// Rate is the number of fixed steps per second, 1-1000. Default 60.
	Rate int `yaml:"rate"`
	// Workers is the number of step workers, at most 1024. Default 0:
	// GOMAXPROCS.
	Workers int `yaml:"workers"`
	// MaxCatchUp is the most steps one pass runs for a room that fell
	// behind, 1-1000. Default 4.
	MaxCatchUp int `yaml:"max-catch-up"`
	// ReadLimit is the largest frame a client may send, in bytes, 1 to
	// 1 MiB. Default 32768.
	ReadLimit int `yaml:"read-limit"`
	// SendQueue is how many frames may wait for a slow client before it is
	// disconnected, 1-65536. Default 32.
	SendQueue int `yaml:"send-queue"`
	// PingInterval is how often a client is pinged, at most 5m. Default 10s.
	PingInterval Duration `yaml:"ping-interval"`
	// HelloTimeout bounds the wait for a client's hello, at most 5m.
	// Default 10s.
	HelloTimeout Duration `yaml:"hello-timeout"`
	// TicketTTL is how long a connection ticket is valid, at most 1h.
	// Default 30s.
	TicketTTL Duration `yaml:"ticket-ttl"`
	// MoveCooldown is how long a player just moved here is not moved
	// again, at most 1h. Default 3s.
	MoveCooldown Duration `yaml:"move-cooldown"`
	// AwayTimeout ends a room whose seated players have all been
	// disconnected this long, at most 24h. Default 60s.
	AwayTimeout Duration `yaml:"away-timeout"`
	// DrainGrace is the time between telling the players of the rooms left
	// at the drain timeout and closing those rooms, at most 5m. Default 2s.
	DrainGrace Duration `yaml:"drain-grace"`
	// Sockets is how a player's connection is served after its hello:
	// "loop" (an event loop for every two CPUs serves every player, on Linux) or "portable"
	// (two goroutines a player). Default "": loop.
	Sockets string `yaml:"sockets"`
	// Limits are the connection rate limits and lockouts.
	Limits RoomLimits `yaml:"limits"`
	// Migrate bounds the moves of a draining server's rooms to the other
	// servers, for a game that implements room.Migrator.
	Migrate RoomMigrate `yaml:"migrate"`
	// Checkpoint writes the rooms' snapshots to the backplane against a
	// crash, for a game that implements room.Migrator.
	Checkpoint RoomCheckpoint `yaml:"checkpoint"`
}

// RoomCheckpoint is muster.room.checkpoint (room.Checkpoint): every
// interval each room's signed snapshot is written to the backplane, and
// when a server dies (it leaves every view without leaving) the others
// resume its rooms from their last checkpoint.
type RoomCheckpoint struct {
	// Interval is the time between two checkpoints of a room, at most
	// 10m; 0 writes none. Only for a game that implements room.Migrator:
	// the room host refuses an interval for another. Default 0.
	Interval Duration `yaml:"interval"`
}

// RoomMigrate is muster.room.migrate (room.Migrate): a draining server
// moves its running rooms to the other servers of the fleet, for a game
// that implements room.Migrator.
type RoomMigrate struct {
	// Disabled keeps every room where it is: a drain waits for the rooms
	// to end, or ends them at its timeout. Default false.
	Disabled bool `yaml:"disabled"`
	// MaxBytes is the largest signed snapshot of a room that moves, 1 to
	// 64 MiB; a larger room stays. Default 1048576 (1 MiB).
	MaxBytes int `yaml:"max-bytes"`
	// Timeout bounds one room's move, from its freeze to the other
	// server's answer, at most 1m; a room not moved by then stays.
	// Default 5s.
	Timeout Duration `yaml:"timeout"`
}

// RoomLimits is muster.room.limits (room.Limits): limits per client
// address, where an IPv6 client counts by its /64.
type RoomLimits struct {
	// Store is where the counts are kept: "memory" (each server counts on
	// its own) or "backplane" (once for the fleet). Default "memory".
	Store string `yaml:"store"`
	// Connects is how many connections an address may open per Window.
	// Default 120.
	Connects int `yaml:"connects"`
	// Window is the rate limit's window, at most 24h. Default 60s.
	Window Duration `yaml:"window"`
	// Open is how many connections an address may hold open at once on
	// this server, played here or relayed through it to another server
	// (which counts them too); one more is refused with 429, as over
	// Connects. 0 means no cap. Default 64.
	Open int `yaml:"open"`
	// Failures is how many failed hellos lock an address out. Default 20.
	Failures int `yaml:"failures"`
	// Lockout is how long a locked-out address is refused, at most 24h.
	// Default 300s.
	Lockout Duration `yaml:"lockout"`
	// Messages is how many messages a connection may send per second;
	// a connection that sends more is closed with 4005. Default 120.
	Messages int `yaml:"messages"`
	// Burst is how many messages a connection may send at once above
	// Messages. Default 240.
	Burst int `yaml:"burst"`
}

// Matchmaking is muster.matchmaking: the matchmaking module
// (matchmaking.Config) and its playlists.
type Matchmaking struct {
	// Tick is the interval between matching rounds, at most 1m. Default
	// 0.1s.
	Tick Duration `yaml:"tick"`
	// Hold is how long a player who arrived with a queue handoff stays
	// before gathering may move it again, at most 1h. Default 0: two fleet
	// heartbeats.
	Hold Duration `yaml:"hold"`
	// Playlists are the queues players enqueue on. Default none: the game
	// declares its own, or lists them here.
	Playlists []Playlist `yaml:"playlists"`
}

// Playlist is one item of muster.matchmaking.playlists
// (matchmaking.Playlist).
type Playlist struct {
	// Name names the playlist; required, 1-64 printable bytes, no spaces.
	Name string `yaml:"name"`
	// Teams is the number of teams in a match. Default 0: 2.
	Teams int `yaml:"teams"`
	// TeamSize is the number of players in a team. Default 0: 1.
	TeamSize int `yaml:"team-size"`
	// Rating is the rule on the players' ratings. Default: none, players
	// are matched in the order they began to wait.
	Rating Rating `yaml:"rating"`
}

// Rating is muster.matchmaking.playlists.N.rating
// (matchmaking.RatingRule): ratings that differ by at most
// window + widen × seconds waited, capped at max, may meet.
type Rating struct {
	// Window is the difference allowed at once. Default 0.
	Window float64 `yaml:"window"`
	// Widen is how much the window widens per second waited. Default 0.
	Widen float64 `yaml:"widen"`
	// Max caps the window; 0 means no cap. Default 0.
	Max float64 `yaml:"max"`
	// Default is the rating of a player who enqueues without one.
	// Default 0.
	Default float64 `yaml:"default"`
}

// Lobby is muster.lobby: the lobby module (lobby.Config).
type Lobby struct {
	// CodeLength is the length of the codes, 4 to 6. Default 5.
	CodeLength int `yaml:"code-length"`
	// MaxMembers is the most members a lobby holds, 1-1000. Default 8.
	MaxMembers int `yaml:"max-members"`
	// RoomKind is the Kind of the rooms lobbies start. Default "lobby".
	RoomKind string `yaml:"room-kind"`
	// Tick is the interval of the module's housekeeping, at most 1m.
	// Default 0.25s.
	Tick Duration `yaml:"tick"`
	// ArrivalTimeout is how long a lobby moved by a drain keeps the place
	// of a member who has not arrived yet, at most 1h. Default 30s.
	ArrivalTimeout Duration `yaml:"arrival-timeout"`
	// CodeFailures is how many wrong codes one client address (an IPv6
	// client: its /64) may try in CodeLockout before its joins are
	// refused, on every server of the fleet. Default 20.
	CodeFailures int `yaml:"code-failures"`
	// CodeLockout is the window of CodeFailures, at most 24h. Default 600s.
	CodeLockout Duration `yaml:"code-lockout"`
}

// positiveUpTo refuses a duration that is not positive, or above hi: every
// duration key has a bound, as the packages add to them (a ticket's
// nonce is kept ttl + 1m, a server's record 3 heartbeats, a room's absence
// is counted from the host's start) and a value near the largest duration
// would wrap round to a negative one.
func positiveUpTo(key string, d, hi Duration) error {
	switch {
	case d <= 0:
		return origin{}.errorf(ErrInvalid, "muster."+key, "want a positive duration, got %s", d)
	case d > hi:
		return origin{}.errorf(ErrInvalid, "muster."+key, "want at most %s, got %s", shortDuration(hi), d)
	}
	return nil
}

// shortDuration writes d as time.Duration does, without its zero minutes
// and seconds: 1h, 5m, 1m30s.
func shortDuration(d Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// validateSections checks muster.room, muster.matchmaking and muster.lobby
// with the rules of room.New, matchmaking.New and lobby.New that need none
// of their bounds (muster.CheckConfig checks those), and the bounds above.
func (c Config) validateSections() error {
	bad := func(key, format string, args ...any) error {
		return origin{}.errorf(ErrInvalid, "muster."+key, format, args...)
	}
	const minute, hour, day = Duration(time.Minute), Duration(time.Hour), Duration(24 * time.Hour)
	atLeast := func(key string, v, lo int) error {
		if v < lo {
			return bad(key, "want at least %d, got %d", lo, v)
		}
		return nil
	}
	r, l := c.Room, c.Room.Limits
	for _, err := range []error{
		func() error {
			if r.Rate < 1 || r.Rate > 1000 {
				return bad("room.rate", "want steps per second, 1-1000, got %d", r.Rate)
			}
			return nil
		}(),
		positiveUpTo("room.ping-interval", r.PingInterval, 5*minute),
		positiveUpTo("room.hello-timeout", r.HelloTimeout, 5*minute),
		positiveUpTo("room.ticket-ttl", r.TicketTTL, hour),
		positiveUpTo("room.move-cooldown", r.MoveCooldown, hour),
		positiveUpTo("room.away-timeout", r.AwayTimeout, day),
		positiveUpTo("room.drain-grace", r.DrainGrace, 5*minute),
		func() error {
			if n := r.Migrate.MaxBytes; n < 1 || n > 64<<20 {
				return bad("room.migrate.max-bytes", "want 1-%d bytes, got %d", 64<<20, n)
			}
			return nil
		}(),
		positiveUpTo("room.migrate.timeout", r.Migrate.Timeout, minute),
		func() error {
			if v := r.Checkpoint.Interval; v < 0 || v > 10*minute {
				return bad("room.checkpoint.interval", "want 0 (off) or a duration of at most %s, got %s", shortDuration(10*minute), v)
			}
			return nil
		}(),
		atLeast("room.limits.connects", l.Connects, 1),
		positiveUpTo("room.limits.window", l.Window, day),
		atLeast("room.limits.open", l.Open, 0),
		atLeast("room.limits.failures", l.Failures, 1),
		positiveUpTo("room.limits.lockout", l.Lockout, day),
		atLeast("room.limits.messages", l.Messages, 1),
		atLeast("room.limits.burst", l.Burst, 1),
		positiveUpTo("matchmaking.tick", c.Matchmaking.Tick, minute),
		func() error {
			if h := c.Matchmaking.Hold; h < 0 {
				return bad("matchmaking.hold", "want 0 (two fleet heartbeats) or a positive duration, got %s", h)
			} else if h > hour {
				return bad("matchmaking.hold", "want at most %s, got %s", shortDuration(hour), h)
			}
			return nil
		}(),
		c.validatePlaylists(),
		func() error {
			if n := c.Lobby.CodeLength; n < 4 || n > 6 {
				return bad("lobby.code-length", "want 4-6, got %d", n)
			}
			return nil
		}(),
		positiveUpTo("lobby.tick", c.Lobby.Tick, minute),
		positiveUpTo("lobby.arrival-timeout", c.Lobby.ArrivalTimeout, hour),
		atLeast("lobby.code-failures", c.Lobby.CodeFailures, 1),
		positiveUpTo("lobby.code-lockout", c.Lobby.CodeLockout, day),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// validatePlaylists checks muster.matchmaking.playlists as matchmaking.New
// does.
func (c Config) validatePlaylists() error {
	seen := make(map[string]int)
	for i, p := range c.Matchmaking.Playlists {
		key := "muster.matchmaking.playlists." + strconv.Itoa(i)
		bad := func(field, format string, args ...any) error {
			return origin{}.errorf(ErrInvalid, key+field, format, args...)
		}
		teams, size := cmp.Or(p.Teams, 2), cmp.Or(p.TeamSize, 1)
		r := p.Rating
		switch {
		case !validPlaylistName(p.Name):
			return bad(".name", "want 1-64 printable bytes without spaces, got %s", quote(p.Name))
		case seen[p.Name] > 0:
			return bad(".name", "playlist %s is also item %d", quote(p.Name), seen[p.Name]-1)
		case teams < 1:
			return bad(".teams", "want a positive number of teams, got %d", p.Teams)
		case size < 1:
			return bad(".team-size", "want a positive team size, got %d", p.TeamSize)
		case teams > 1000 || size > 1000 || teams*size > 1000: // the first two keep the product from overflowing
			return bad(".team-size", "a match of %d teams of %d is over the limit of 1000 players", teams, size)
		case r.Window < 0 || math.IsInf(r.Window, 0) || math.IsNaN(r.Window):
			return bad(".rating.window", "want a finite number, not negative, got %v", r.Window)
		case r.Widen < 0 || math.IsInf(r.Widen, 0) || math.IsNaN(r.Widen):
			return bad(".rating.widen", "want a finite number, not negative, got %v", r.Widen)
		case r.Max < 0 || math.IsInf(r.Max, 0) || math.IsNaN(r.Max):
			return bad(".rating.max", "want a finite number, not negative, got %v", r.Max)
		case math.IsInf(r.Default, 0) || math.IsNaN(r.Default):
			return bad(".rating.default", "want a finite number, got %v", r.Default)
		}
		seen[p.Name] = i + 1
	}
	return nil
}

// validPlaylistName reports whether s is 1-64 printable bytes without
// spaces, matchmaking's rule for names and kinds.
func validPlaylistName(s string) bool {
	return s != "" && len(s) <= 64 && !strings.ContainsFunc(s, func(r rune) bool {
		return !unicode.IsPrint(r) || unicode.IsSpace(r)
	})
}
