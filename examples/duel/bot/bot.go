package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Bot is one simulated player. Create it with New and start it with Run;
// its methods are safe for concurrent use.
type Bot struct {
	cfg     Config
	base    *url.URL
	logger  *slog.Logger
	steer   steering
	wake    chan struct{} // a command or a drop waits; capacity 1
	started atomic.Bool   // Run was called
	done    chan struct{} // closed when Run returns

	mu       sync.Mutex
	rep      Report
	changed  chan struct{} // closed and replaced at every change of rep
	outbox   []message     // for the current connection, or the next
	dropping bool          // Drop was called
	runErr   error
	queued   string // the playlist the bot queued for and was not matched from
	queuedAt time.Time
	// confirmed: a server answered the last queue request with
	// queue.waiting. A drain redirect before that moved no place.
	confirmed bool
	// pausing is the redirect, followed while seated, whose Pause waits
	// for the room's next state (0 for none: it is index pausing-1).
	pausing int
}

// message is a client message: {"type": …, "data": …}.
type message struct {
	Type string `json:"type"`
	Data any    `json:"data"`
}

// queueMessage is the message that queues for playlist.
func queueMessage(playlist string) message {
	return message{Type: "queue", Data: map[string]string{"playlist": playlist}}
}

// New returns a bot for cfg. It checks cfg and starts nothing.
func New(cfg Config) (*Bot, error) {
	cfg, base, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Bot{
		cfg:     cfg,
		base:    base,
		logger:  cfg.Logger.With("component", "bot"),
		steer:   steering{style: cfg.Style, rng: rand.New(rand.NewPCG(cfg.Seed, 1))},
		wake:    make(chan struct{}, 1),
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
	b.rep.Player = cfg.Player
	return b, nil
}

// Queue enqueues the bot on playlist ("duel").
func (b *Bot) Queue(playlist string) {
	b.command(queueMessage(playlist), func() {
		b.queued, b.queuedAt, b.confirmed = playlist, time.Now(), false
	})
}

// Unqueue takes the bot out of its queue.
func (b *Bot) Unqueue() {
	b.command(message{Type: "unqueue", Data: struct{}{}}, func() { b.queued = "" })
}

// CreateLobby creates a lobby with the bot as its host; its code comes
// with the next lobby state (Report.Lobby).
func (b *Bot) CreateLobby() { b.command(message{Type: "lobby.create", Data: struct{}{}}, nil) }

// JoinLobby joins the lobby of code, wherever it lives.
func (b *Bot) JoinLobby(code string) {
	b.command(message{Type: "lobby.join", Data: map[string]string{"code": code}}, nil)
}

// LeaveLobby leaves the bot's lobby.
func (b *Bot) LeaveLobby() { b.command(message{Type: "lobby.leave", Data: struct{}{}}, nil) }

// StartLobby asks, as the lobby's host, for a match of its members.
func (b *Bot) StartLobby() { b.command(message{Type: "lobby.start", Data: struct{}{}}, nil) }

// LeaveRoom gives up the bot's seat for good; its room ends for it with
// reason "left".
func (b *Bot) LeaveRoom() {
	b.command(message{Type: "leave", Data: struct{}{}}, func() { b.endRoomLocked("", "left") })
}

// Drop cuts the bot's connection as a network failure would, without a
// close handshake (or its next one, when it is between connections); Run
// reconnects at once with hello "rejoin".
func (b *Bot) Drop() {
	b.mu.Lock()
	b.dropping = true
	b.mu.Unlock()
	b.poke()
}

// command applies apply to the bot's state (under b.mu) and puts m in the
// outbox, for Run to send.
func (b *Bot) command(m message, apply func()) {
	b.mu.Lock()
	if apply != nil {
		apply()
	}
	b.outbox = append(b.outbox, m)
	b.eventLocked("command", "", m.Type)
	b.mu.Unlock()
	b.poke()
}

// poke wakes Run's session, unless a wake is already waiting.
func (b *Bot) poke() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Report returns a copy of what happened to the bot so far.
func (b *Bot) Report() Report {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rep.clone()
}

// Wait waits until cond holds for the bot's report, which it checks now
// and after every change. It returns ctx's error when ctx ends first, and
// ErrStopped (joined with Run's error) when Run has returned.
func (b *Bot) Wait(ctx context.Context, cond func(Report) bool) error {
	for {
		b.mu.Lock()
		r, ch := b.rep.clone(), b.changed
		var stopped bool
		var runErr error
		select {
		case <-b.done:
			stopped, runErr = true, b.runErr
		default:
		}
		b.mu.Unlock()
		if cond(r) {
			return nil
		}
		if stopped {
			return errors.Join(ErrStopped, runErr)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Done is closed when Run has returned.
func (b *Bot) Done() <-chan struct{} { return b.done }

// Run connects and plays until ctx ends (it returns nil), until
// Config.Matches rooms have ended (nil), or until the server closes the
// connection for a protocol error (a *CloseError). It leaves its room and
// closes its connection before it returns. A bot runs once.
func (b *Bot) Run(ctx context.Context) error {
	if b.started.Swap(true) {
		return ErrRunTwice
	}
	err := b.run(ctx)
	b.mu.Lock()
	b.runErr = err
	b.eventLocked("stop", "", fmt.Sprint(err))
	close(b.done)
	b.notifyLocked()
	b.mu.Unlock()
	return err
}
