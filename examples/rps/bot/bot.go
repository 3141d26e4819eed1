// Package bot is a player of the rps example for its tests and for load:
// it gets a ticket for its player id (and keeps the id, so that every
// reconnect is the same player), connects through the game's public
// address, queues or plays a friend by lobby code, throws at random as
// soon as a round starts, follows redirects, and reconnects after a drop
// into its seat. Drop and Return make it vanish and come back, for the
// tests of a player who loses a turn or forfeits.
//
// New starts nothing; Run plays until its context ends and returns once
// its connection is closed. The commands and Report may be called from
// any goroutine.
package bot

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
)

// Config is a bot's configuration.
type Config struct {
	// URL is the game's public address (http or https), ending in "/".
	URL string
	// Player is the bot's player id; "" takes the guest id the server
	// gives, and keeps it.
	Player string
	// HTTPClient asks for tickets and dials; nil is http.DefaultClient.
	HTTPClient *http.Client
	// Logger is for what goes wrong; nil is slog.Default().
	Logger *slog.Logger
}

// Bot is one player.
type Bot struct {
	cfg  Config
	base *url.URL

	mu      sync.Mutex
	rep     Report
	pending []message // commands for the next welcome or kick
	hold    bool      // does not throw
	away    bool      // Drop called, not yet Return
	changed chan struct{}
	kick    chan struct{} // pending commands, or hold lifted
	drop    chan struct{} // Drop called
	back    chan struct{} // Return called
}

// ErrConfig is returned by New for a URL it cannot use.
var ErrConfig = errors.New("bot: invalid config")

// New returns a bot with cfg; it starts nothing.
func New(cfg Config) (*Bot, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, errors.Join(ErrConfig, errors.New("bot: URL: want an http or https address, got "+cfg.URL))
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Bot{cfg: cfg, base: u, rep: Report{Player: cfg.Player},
		changed: make(chan struct{}), kick: make(chan struct{}, 1), drop: make(chan struct{}, 1), back: make(chan struct{}, 1)}, nil
}

// message is a frame to the server.
type message struct {
	Type string `json:"type"`
	Data any    `json:"data,omitempty"`
}

// Queue queues the bot for playlist.
func (b *Bot) Queue(playlist string) {
	b.command(message{Type: "queue", Data: map[string]string{"playlist": playlist}})
}

// CreateLobby creates a lobby; its code shows in Report().Lobby.
func (b *Bot) CreateLobby() { b.command(message{Type: "lobby.create"}) }

// JoinLobby joins the lobby of code.
func (b *Bot) JoinLobby(code string) {
	b.command(message{Type: "lobby.join", Data: map[string]string{"code": code}})
}

// StartLobby starts the match of the bot's lobby (it must be its host).
func (b *Bot) StartLobby() { b.command(message{Type: "lobby.start"}) }

// Hold stops the bot throwing (hold true) or lets it throw again.
func (b *Bot) Hold(hold bool) {
	b.mu.Lock()
	b.hold = hold
	b.mu.Unlock()
	poke(b.kick)
}

// Drop closes the bot's connection without a word, and keeps it away
// until Return.
func (b *Bot) Drop() {
	b.mu.Lock()
	b.away = true
	b.mu.Unlock()
	poke(b.drop)
}

// Return ends a Drop: the bot reconnects, as the same player.
func (b *Bot) Return() {
	b.mu.Lock()
	b.away = false
	b.mu.Unlock()
	poke(b.back)
}

func (b *Bot) command(m message) {
	b.mu.Lock()
	b.pending = append(b.pending, m)
	b.mu.Unlock()
	poke(b.kick)
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Report returns what happened to the bot so far.
func (b *Bot) Report() Report {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rep.clone()
}

// Wait returns when cond holds for the bot's report, or ctx's error.
func (b *Bot) Wait(ctx context.Context, cond func(Report) bool) error {
	for {
		b.mu.Lock()
		ok, ch := cond(b.rep.clone()), b.changed
		b.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// update changes the report under the lock and wakes the waiters.
func (b *Bot) update(f func(r *Report)) {
	b.mu.Lock()
	f(&b.rep)
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}
