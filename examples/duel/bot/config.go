package bot

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Config configures a Bot. The zero value of each field means its default.
type Config struct {
	// URL is the game's public address, where the browser client is
	// served: tickets are POSTed to <URL>/ticket and the WebSocket is
	// <URL>/play. Required; http or https.
	URL string

	// Player is the player id the bot asks its tickets for. Default "":
	// the id the server gives the first ticket (a guest id), kept after.
	Player string

	// Style is how the bot steers in a match. Default StyleChase.
	Style Style

	// InputRate is the number of inputs a second the bot sends while it is
	// seated. Default 20, the rate of the server's snapshots.
	InputRate int

	// Matches ends Run, with nil, once this many of the bot's rooms have
	// ended. Default 0: no limit.
	Matches int

	// Anywhere makes the bot reconnect after a drop without naming a
	// server, as a client that kept nothing: the fleet must find its room.
	// Default false: it names the server it was last on, as the browser
	// client names the server it was last sent to.
	Anywhere bool

	// WriteTimeout bounds one message's write. A write that times out
	// closes the connection (the WebSocket library's rule), so it is
	// generous, as a browser is: a loaded machine must not make the bot
	// drop itself. Default 10s.
	WriteTimeout time.Duration

	// ConnectTimeout bounds one connection attempt: ticket, handshake and
	// welcome. Default 5s.
	ConnectTimeout time.Duration

	// RetryMax caps the wait between failed connection attempts, which
	// starts at 50ms and doubles. The first attempt after a drop is made
	// at once. Default 1s.
	RetryMax time.Duration

	// Confirm is how long the bot waits, after a redirect that moved its
	// queue place, for the new server to confirm the place (queue.waiting)
	// before it queues again by itself. Default 2s.
	Confirm time.Duration

	// HTTPClient makes the ticket requests and the WebSocket handshakes. It
	// must have no Timeout (the bot bounds each attempt with a context).
	// Default: a client on http.DefaultTransport.
	HTTPClient *http.Client

	// Seed seeds the random steering. Default 0: a random seed.
	Seed uint64

	// Logger receives a debug line per event. Default slog.Default().
	Logger *slog.Logger
}

// withDefaults returns c with its defaults filled in and the base URL its
// URL names (with a trailing slash, without query or fragment), or an
// error that names the field that is wrong.
func (c Config) withDefaults() (Config, *url.URL, error) {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, nil, fmt.Errorf("bot: Config.URL %q is not an http or https URL", c.URL)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	u.RawQuery, u.Fragment = "", ""
	c = c.filled()
	if err := c.validate(); err != nil {
		return c, nil, err
	}
	return c, u, nil
}

// filled returns c with each zero field set to its default.
func (c Config) filled() Config {
	if c.Style == "" {
		c.Style = StyleChase
	}
	if c.InputRate == 0 {
		c.InputRate = 20
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 5 * time.Second
	}
	if c.RetryMax == 0 {
		c.RetryMax = time.Second
	}
	if c.Confirm == 0 {
		c.Confirm = 2 * time.Second
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.Seed == 0 {
		c.Seed = rand.Uint64()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// validate checks a filled c.
func (c Config) validate() error {
	switch {
	case c.Style != StyleChase && c.Style != StyleRandom && c.Style != StyleIdle:
		return fmt.Errorf("bot: Config.Style %q is not chase, random or idle", c.Style)
	case c.InputRate < 0 || c.InputRate > 1000:
		return fmt.Errorf("bot: Config.InputRate %d is outside 1-1000", c.InputRate)
	case c.Matches < 0:
		return fmt.Errorf("bot: Config.Matches %d is negative", c.Matches)
	case c.ConnectTimeout < 0 || c.RetryMax < 0 || c.Confirm < 0 || c.WriteTimeout < 0:
		return errors.New("bot: Config durations must not be negative")
	case c.HTTPClient.Timeout != 0:
		return errors.New("bot: Config.HTTPClient must have no Timeout")
	}
	return nil
}
