package room

import (
	"crypto/rand"
	"runtime"
	"time"

	"github.com/muster-gg/muster/internal/defaults"
)

// The largest Config.Workers, Config.SendQueue, Config.MaxCatchUp and
// Config.ReadLimit: a value past them is a mistake, refused by New rather
// than run out of memory or hold a worker. A step worker per CPU is the
// most that runs at once; each client's queue is allocated whole; a room
// that fell behind holds its worker, and every room queued behind it, for
// the steps it catches up (1000 is a second at the highest rate); and
// every connection, before its hello too, can make the host hold a whole
// frame of ReadLimit bytes.
const (
	MaxWorkers            = 1024
	MaxSendQueue          = 65536
	MaxCatchUpSteps       = 1000
	MaxReadLimit    int64 = 1 << 20
)

// Config configures a Host. The zero value of each field means its
// default.
type Config struct {
	// Rate is the number of fixed steps per second. Default 60.
	Rate int `yaml:"rate"`

	// Workers is the number of step workers, at most MaxWorkers. Default
	// GOMAXPROCS.
	Workers int `yaml:"workers"`

	// MaxCatchUp is the most steps one pass runs for a room that fell
	// behind; the rest are dropped. At most MaxCatchUpSteps. Default 4.
	MaxCatchUp int `yaml:"max-catch-up"`

	// ReadLimit is the largest frame a client may send, in bytes; a larger
	// one closes the connection (1009). At most MaxReadLimit (1 MiB).
	// Default 32 KiB.
	ReadLimit int64 `yaml:"read-limit"`

	// SendQueue is how many frames may wait for a slow client before it is
	// disconnected: 32 frames is 1.6 s of 20 Hz snapshots. At most
	// MaxSendQueue. Default 32.
	SendQueue int `yaml:"send-queue"`

	// PingInterval is how often a client is pinged; one that does not
	// answer within another interval (it stopped reading, or is gone) is
	// disconnected. At most 5m. Default 10s.
	PingInterval time.Duration `yaml:"ping-interval"`

	// HelloTimeout bounds the wait for a client's hello. At most 5m.
	// Default 10s.
	HelloTimeout time.Duration `yaml:"hello-timeout"`

	// Secret signs connection tickets; every server of a fleet needs the
	// same one. Default "": a random key, good for one server only.
	Secret string `yaml:"secret"`

	// TicketTTL is how long a ticket is valid. At most 1h. Default 30s.
	TicketTTL time.Duration `yaml:"ticket-ttl"`

	// MoveCooldown is how long a player who was just moved here (it came
	// with ?node=) is not moved again, so stale views cannot bounce it. A
	// fresh connection may be moved at once. At most 1h. Default 3s.
	MoveCooldown time.Duration `yaml:"move-cooldown"`

	// AwayTimeout ends a room whose seated players have all been
	// disconnected this long (a closed tab keeps its seat until then).
	// At most 24h. Default 60s.
	AwayTimeout time.Duration `yaml:"away-timeout"`

	// DrainGrace is the time between telling the players of the rooms left
	// at the drain timeout and closing those rooms. At most 5m. Default 2s.
	DrainGrace time.Duration `yaml:"drain-grace"`

	// Sockets is how a player's connection is served after its hello:
	// SocketsLoop, by event loops (one for every two CPUs) where the
	// platform has them (Linux), or SocketsPortable, by two goroutines
	// each. Clients see no difference; the loops spend less CPU per
	// player. Default "": SocketsLoop (SocketsPortable in a build with the
	// muster_portable tag). On other platforms SocketsLoop serves them as
	// SocketsPortable does.
	Sockets string `yaml:"sockets"`

	// Limits are the connection rate limits and lockouts.
	Limits Limits `yaml:"limits"`

	// Migrate bounds the moves of rooms to other servers, for a game that
	// implements Migrator.
	Migrate Migrate `yaml:"migrate"`

	// Checkpoint writes the rooms' snapshots to the backplane, so that
	// another server resumes them if this one dies, for a game that
	// implements Migrator.
	Checkpoint Checkpoint `yaml:"checkpoint"`
}

// Checkpoint configures the checkpoints of a server's rooms against its
// crash (see checkpoint.go): every Interval each room of a game that
// implements Migrator is snapshotted at a step boundary and the signed
// snapshot written to the backplane; when the server leaves every view
// without leaving (it was killed), the other servers resume its rooms from
// them. A snapshot over Migrate.MaxBytes is not written.
type Checkpoint struct {
	// Interval is the time between two checkpoints of a room, at most
	// MaxCheckpointInterval. Default 0: no checkpoints. New refuses an
	// interval for a game without Migrator (ErrConfig).
	Interval time.Duration `yaml:"interval"`
}

// MaxCheckpointInterval is the largest Checkpoint.Interval.
const MaxCheckpointInterval = 10 * time.Minute

// Migrate configures the moves of a draining server's rooms to the other
// servers of its fleet (see Migrator).
type Migrate struct {
	// Disabled keeps every room where it is, as for a game without
	// Migrator: a drain waits for the rooms to end. Default false.
	Disabled bool `yaml:"disabled"`
	// MaxBytes is the largest signed snapshot of a room that moves; a
	// larger room stays. At most MaxMoveBytes. Default 1 MiB.
	MaxBytes int `yaml:"max-bytes"`
	// Timeout bounds one room's move, from the ask to freeze it to the
	// other server's answer; a room not moved by then stays. At most 1m.
	// Default 5s.
	Timeout time.Duration `yaml:"timeout"`
}

// MaxMoveBytes is the largest Migrate.MaxBytes.
const MaxMoveBytes = 64 << 20

// DefaultConfig returns the documented defaults: what New uses for each
// zero field. Workers and Secret stay zero: New gives them GOMAXPROCS and
// a random key.
func DefaultConfig() Config {
	return Config{
		Rate: 60, MaxCatchUp: 4, ReadLimit: 32 << 10, SendQueue: 32,
		PingInterval: 10 * time.Second, HelloTimeout: 10 * time.Second,
		TicketTTL: 30 * time.Second, MoveCooldown: 3 * time.Second,
		AwayTimeout: time.Minute, DrainGrace: 2 * time.Second,
		Limits:  defaultLimits(),
		Migrate: Migrate{MaxBytes: 1 << 20, Timeout: 5 * time.Second},
	}
}

func (c Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	d.Workers = min(runtime.GOMAXPROCS(0), MaxWorkers)
	defaults.Fill(&c, d)
	if c.Secret == "" {
		c.Secret = rand.Text()
	}
	if c.Sockets == "" {
		c.Sockets = defaultSockets
	}
	var err error
	if c.Limits, err = c.Limits.withDefaults(); err != nil {
		return c, err
	}
	switch {
	case c.Rate < 0 || c.Rate > 1000:
		return c, configError("rate", "%d is outside 1-1000", c.Rate)
	case c.Workers < 0 || c.Workers > MaxWorkers:
		return c, configError("workers", "%d is outside 0-%d", c.Workers, MaxWorkers)
	case c.MaxCatchUp < 0 || c.MaxCatchUp > MaxCatchUpSteps:
		return c, configError("max-catch-up", "%d is outside 0-%d", c.MaxCatchUp, MaxCatchUpSteps)
	case c.ReadLimit < 0 || c.ReadLimit > MaxReadLimit:
		return c, configError("read-limit", "%d is outside 0-%d", c.ReadLimit, MaxReadLimit)
	case c.SendQueue < 0 || c.SendQueue > MaxSendQueue:
		return c, configError("send-queue", "%d is outside 0-%d", c.SendQueue, MaxSendQueue)
	case c.Sockets != SocketsLoop && c.Sockets != SocketsPortable:
		return c, configError("sockets", "%q is neither %s nor %s", c.Sockets, SocketsLoop, SocketsPortable)
	case c.Migrate.MaxBytes < 0 || c.Migrate.MaxBytes > MaxMoveBytes:
		return c, configError("migrate.max-bytes", "%d is outside 0-%d", c.Migrate.MaxBytes, MaxMoveBytes)
	}
	// Durations are bounded too: the host adds to them (a used ticket is
	// remembered for TicketTTL + 1m, a room's absence counts from the
	// host's start), and one near the largest duration would wrap round to
	// a negative one.
	const minute, hour, day = time.Minute, time.Hour, 24 * time.Hour
	for _, d := range []struct {
		key    string
		v, max time.Duration
	}{
		{"ping-interval", c.PingInterval, 5 * minute}, {"hello-timeout", c.HelloTimeout, 5 * minute},
		{"ticket-ttl", c.TicketTTL, hour}, {"move-cooldown", c.MoveCooldown, hour},
		{"drain-grace", c.DrainGrace, 5 * minute}, {"away-timeout", c.AwayTimeout, day},
		{"migrate.timeout", c.Migrate.Timeout, minute},
		{"checkpoint.interval", c.Checkpoint.Interval, MaxCheckpointInterval},
	} {
		if d.v < 0 || d.v > d.max {
			return c, configError(d.key, "%s is outside 0-%s", d.v, d.max)
		}
	}
	return c, nil
}
