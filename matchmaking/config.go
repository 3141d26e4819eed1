package matchmaking

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"

	"github.com/muster-gg/muster/internal/defaults"
)

// Config configures a Module. The zero value of each field means its
// default.
type Config struct {
	// Tick is the interval between matching rounds (and, while the server
	// drains, between hand-over attempts). A player who enqueues or
	// arrives also starts a round at once, but no sooner than Tick/10
	// after the last one. Default 100ms.
	Tick time.Duration `yaml:"tick"`

	// Hold is how long a player who arrived with a queue handoff stays
	// before gathering may move it again, and how long a server that
	// received such a player gathers that playlist itself. It covers a
	// registry view that lags the sender's by up to two heartbeats, so
	// that nobody is bounced straight back. Default two fleet heartbeats.
	Hold time.Duration `yaml:"hold"`

	// Ratings, when set, gives the rating of a player who queues for a
	// playlist with a RatingRule, from the game's own records (a database,
	// a profile service): the rating a client sends is then ignored, so no
	// player picks its opponents by claiming another's rating. A player it
	// fails for, or gives a rating that is not finite, is refused with
	// queue.error (ErrRating), and the error is logged. It runs on the
	// player's connection, holding its next messages, outside the module's
	// locks, with a context that ends after 5 s or when the server closes
	// the connection; keep it quick.
	Ratings func(ctx context.Context, player, playlist string) (float64, error) `yaml:"-"`
}

// DefaultConfig returns the documented defaults: what New uses for each
// zero field. Hold stays zero: New makes it two fleet heartbeats.
func DefaultConfig() Config {
	return Config{Tick: 100 * time.Millisecond}
}

func (c Config) withDefaults() (Config, error) {
	defaults.Fill(&c, DefaultConfig())
	switch {
	case c.Tick < 0:
		return c, fmt.Errorf("%w: Config.Tick %v is negative", ErrConfig, c.Tick)
	case c.Hold < 0:
		return c, fmt.Errorf("%w: Config.Hold %v is negative", ErrConfig, c.Hold)
	}
	return c, nil
}

// Playlist is a queue players enqueue on: a match needs Teams teams of
// TeamSize players, chosen by Rating.
type Playlist struct {
	// Name names the playlist in the players' queue messages, in the
	// queue:<name> statistic and as the Kind of the rooms it opens.
	// Required: printable, no spaces, at most 64 bytes.
	Name string `yaml:"name"`

	// Teams is the number of teams in a match. Default 2.
	Teams int `yaml:"teams"`

	// TeamSize is the number of players in a team. Default 1.
	TeamSize int `yaml:"team-size"`

	// Rating is the rule on the players' ratings. The zero value ignores
	// ratings: players are matched in the order they began to wait.
	Rating RatingRule `yaml:"rating"`
}

// RatingRule decides which ratings may meet in a match, with a window
// that widens with the time waited: a player who has waited w may be
// matched with players whose ratings differ from its own by at most
// Window + Widen*w (in seconds), capped at Max.
//
// A match forms around the player who has waited longest (its window is
// the widest): it takes the players nearest in rating to it, as long as
// they lie within its window. The zero RatingRule ignores ratings.
type RatingRule struct {
	// Window is the difference allowed at once.
	Window float64 `yaml:"window"`
	// Widen is how much the window widens per second waited.
	Widen float64 `yaml:"widen"`
	// Max caps the window; 0 means no cap.
	Max float64 `yaml:"max"`
	// Default is the rating of a player who enqueues without one.
	Default float64 `yaml:"default"`
}

// enabled reports whether the rule looks at ratings at all.
func (r RatingRule) enabled() bool { return r.Window != 0 || r.Widen != 0 || r.Max != 0 }

// window returns the difference allowed after waiting waited.
func (r RatingRule) window(waited time.Duration) float64 {
	w := r.Window + r.Widen*waited.Seconds()
	if r.Max > 0 && w > r.Max {
		w = r.Max
	}
	return w
}

// size returns the players of one match.
func (p Playlist) size() int { return p.Teams * p.TeamSize }

func (p Playlist) withDefaults() (Playlist, error) {
	if p.Teams == 0 {
		p.Teams = 2
	}
	if p.TeamSize == 0 {
		p.TeamSize = 1
	}
	r := p.Rating
	switch {
	case !validName(p.Name):
		return p, fmt.Errorf("%w: Playlist.Name %q must be 1-64 printable bytes without spaces", ErrConfig, p.Name)
	case p.Teams < 1 || p.TeamSize < 1:
		return p, fmt.Errorf("%w: playlist %s: Teams %d and TeamSize %d must be positive", ErrConfig, p.Name, p.Teams, p.TeamSize)
	case p.Teams > 1000 || p.TeamSize > 1000 || p.Teams*p.TeamSize > 1000: // the first two keep the product from overflowing
		return p, fmt.Errorf("%w: playlist %s: a match of %d teams of %d is over the limit of 1000 players", ErrConfig, p.Name, p.Teams, p.TeamSize)
	case r.Window < 0 || r.Widen < 0 || r.Max < 0 || !finite(r.Window, r.Widen, r.Max, r.Default):
		return p, fmt.Errorf("%w: playlist %s: Rating values must be finite and not negative", ErrConfig, p.Name)
	}
	return p, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !unicode.IsPrint(c) || unicode.IsSpace(c) {
			return false
		}
	}
	return !strings.ContainsRune(s, 0)
}

func finite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
