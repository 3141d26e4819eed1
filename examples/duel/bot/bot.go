package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
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

func (c Config) withDefaults() (Config, *url.URL, error) {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, nil, fmt.Errorf("bot: Config.URL %q is not an http or https URL", c.URL)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	u.RawQuery, u.Fragment = "", ""
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
	switch {
	case c.Style != StyleChase && c.Style != StyleRandom && c.Style != StyleIdle:
		return c, nil, fmt.Errorf("bot: Config.Style %q is not chase, random or idle", c.Style)
	case c.InputRate < 0 || c.InputRate > 1000:
		return c, nil, fmt.Errorf("bot: Config.InputRate %d is outside 1-1000", c.InputRate)
	case c.Matches < 0:
		return c, nil, fmt.Errorf("bot: Config.Matches %d is negative", c.Matches)
	case c.ConnectTimeout < 0 || c.RetryMax < 0 || c.Confirm < 0 || c.WriteTimeout < 0:
		return c, nil, errors.New("bot: Config durations must not be negative")
	case c.HTTPClient.Timeout != 0:
		return c, nil, errors.New("bot: Config.HTTPClient must have no Timeout")
	}
	return c, u, nil
}

// Bot is one simulated player. Create it with New and start it with Run;
// its methods are safe for concurrent use.
type Bot struct {
	cfg    Config
	base   *url.URL
	logger *slog.Logger
	steer  steering
	wake   chan struct{} // a command or a drop waits; capacity 1

	mu       sync.Mutex
	rep      Report
	changed  chan struct{} // closed and replaced at every change of rep
	outbox   []message     // for the current connection, or the next
	dropping bool          // Drop was called
	started  bool
	done     chan struct{} // closed when Run returns
	runErr   error
	queued   string // the playlist the bot queued for and was not matched from
	queuedAt time.Time
	// confirmed: a server answered the last queue request with
	// queue.waiting. A drain redirect before that moved no place.
	confirmed bool
}

// message is a client message: {"type": …, "data": …}.
type message struct {
	Type string `json:"type"`
	Data any    `json:"data"`
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
	b.command(message{Type: "queue", Data: map[string]string{"playlist": playlist}}, func() {
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
	b.mu.Lock()
	if b.started {
		b.mu.Unlock()
		return ErrRunTwice
	}
	b.started = true
	b.mu.Unlock()
	err := b.run(ctx)
	b.mu.Lock()
	b.runErr = err
	b.eventLocked("stop", "", fmt.Sprint(err))
	close(b.done)
	b.notifyLocked()
	b.mu.Unlock()
	return err
}

// link is what the next connection carries over from the last.
type link struct {
	mode     string        // hello mode
	hint     string        // the server to ask for, "" for any
	param    string        // the query parameter naming it
	ticket   string        // a redirect's ticket, for the next attempt only; "" to ask for one
	query    string        // a redirect's ready query (param=node&ticket=…), for the next attempt only
	ended    time.Time     // when the last connection ended; zero before the first
	cause    string        // why: "redirect", "drop" or "asked"
	reason   string        // a redirect's reason
	attempts int           // connection attempts since ended
	room     string        // the room the bot is on its way back to, if any
	lost     time.Time     // when the connection in that room ended
	conns    int           // connections since lost
	wait     time.Duration // the last wait before going back to an unreachable server
}

func (b *Bot) run(ctx context.Context) error {
	l := link{mode: "new", param: "node"}
	var (
		backoff     time.Duration
		unreachable string // a server the relay could not reach for us
	)
	for ctx.Err() == nil {
		l.attempts++
		c, err := b.connect(ctx, l)
		l.ticket, l.query = "", "" // a redirect's ticket is good for one attempt: a retry asks for a new one
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if ce := (*CloseError)(nil); errors.As(err, &ce) && fatal(ce.Code) {
				return ce
			}
			backoff = min(max(2*backoff, 50*time.Millisecond), b.cfg.RetryMax)
			sleep(ctx, backoff)
			continue
		}
		l.conns++
		unreachable = ""
		if l.hint != "" && c.node != l.hint {
			unreachable = l.hint // the relay could not reach it and served us here
		}
		end := b.session(ctx, c, l)
		switch end.kind {
		case endStop:
			return nil
		case endFatal:
			return end.err
		}

		// What the next connection carries over.
		seated, _ := b.seatedRoom()
		if onTheWay := l.room != "" && seated == l.room && c.room != l.room; !onTheWay {
			l.room, l.lost, l.conns = seated, end.at, 0
		}
		l.mode, l.ended, l.attempts, l.cause, l.reason = "rejoin", end.at, 0, end.cause(), end.redirect.Reason
		backoff = 0
		switch {
		case end.kind == endRedirect:
			l.hint = end.redirect.Node
			if end.redirect.Param != "" {
				l.param = end.redirect.Param
			}
			l.ticket, l.query = end.redirect.Ticket, end.redirect.Query
			if l.hint != "" && l.hint == unreachable {
				// Sent back to a server the relay could not reach: it died
				// and the fleet has not noticed yet. Wait a little, as a
				// person would, instead of bouncing at full speed.
				backoff = min(max(2*l.wait, 50*time.Millisecond), b.cfg.RetryMax)
				l.wait = backoff
				b.event("bounce", c.node, fmt.Sprintf("sent back to unreachable %s; waiting %v", l.hint, backoff))
				sleep(ctx, backoff)
			} else {
				l.wait = 0
			}
		case b.cfg.Anywhere:
			l.hint = ""
		default:
			l.hint = c.node
		}
	}
	return nil
}

// seatedRoom returns the room the bot is seated in.
func (b *Bot) seatedRoom() (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rm := b.currentLocked(); rm != nil {
		return rm.ID, true
	}
	return "", false
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// conn is a welcomed connection.
type conn struct {
	ws      *websocket.Conn
	node    string // the server that welcomed it
	room    string // the room the welcome named
	frames  chan []byte
	readErr error // valid once frames is closed
	cancel  context.CancelFunc
}

// connect gets a ticket (the one a redirect gave, or a new one), dials,
// says hello and reads the welcome.
func (b *Bot) connect(ctx context.Context, l link) (*conn, error) {
	cctx, cancel := context.WithTimeout(ctx, b.cfg.ConnectTimeout)
	defer cancel()
	fail := func(stage string, err error) error {
		b.mu.Lock()
		b.rep.Failures = append(b.rep.Failures, Failure{At: time.Now(), Stage: stage, Node: l.hint, Err: err.Error()})
		b.eventLocked("failure", l.hint, stage+": "+err.Error())
		b.notifyLocked()
		b.mu.Unlock()
		return err
	}
	ticket := l.ticket
	if ticket == "" {
		var err error
		if ticket, err = b.ticket(cctx); err != nil {
			return nil, fail("ticket", err)
		}
	}
	ws, _, err := websocket.Dial(cctx, b.playURL(ticket, l), &websocket.DialOptions{HTTPClient: b.cfg.HTTPClient})
	if err != nil {
		return nil, fail("dial", err)
	}
	ws.SetReadLimit(1 << 20)
	hello := message{Type: "hello", Data: map[string]string{"mode": l.mode}}
	var w welcome
	err = writeJSON(cctx, ws, hello)
	if err == nil {
		w, err = readWelcome(cctx, ws)
	}
	if err != nil {
		ws.CloseNow()
		if code := websocket.CloseStatus(err); code != -1 {
			var reason string
			if ce := (websocket.CloseError{}); errors.As(err, &ce) {
				reason = ce.Reason
			}
			err = &CloseError{Node: l.hint, Code: code, Reason: reason}
		}
		return nil, fail("hello", err)
	}
	rctx, rcancel := context.WithCancel(context.Background())
	c := &conn{ws: ws, node: w.Node, room: w.Room, frames: make(chan []byte, 16), cancel: rcancel}
	go func() {
		defer close(c.frames)
		for {
			_, data, err := ws.Read(rctx)
			if err != nil {
				c.readErr = err
				return
			}
			select {
			case c.frames <- data:
			case <-rctx.Done():
				c.readErr = rctx.Err()
				return
			}
		}
	}()
	b.welcomed(c, w, l)
	return c, nil
}

type welcome struct {
	Type   string `json:"type"`
	Node   string `json:"node"`
	Player string `json:"player"`
	Room   string `json:"room"`
}

func readWelcome(ctx context.Context, ws *websocket.Conn) (welcome, error) {
	_, data, err := ws.Read(ctx)
	if err != nil {
		return welcome{}, err
	}
	var w welcome
	if err := json.Unmarshal(data, &w); err != nil || w.Type != "welcome" {
		return welcome{}, fmt.Errorf("expected a welcome, got %.80q", data)
	}
	return w, nil
}

func writeJSON(ctx context.Context, ws *websocket.Conn, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return ws.Write(ctx, websocket.MessageText, data)
}

// ticket asks for a connection ticket for the bot's player.
func (b *Bot) ticket(ctx context.Context) (string, error) {
	b.mu.Lock()
	player := b.rep.Player
	b.rep.Tickets++
	b.mu.Unlock()
	body, _ := json.Marshal(map[string]string{"player": player})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.base.JoinPath("ticket").String(), bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("ticket: %s: %s", resp.Status, bytes.TrimSpace(data))
	}
	var t struct {
		Ticket string `json:"ticket"`
		Player string `json:"player"`
	}
	if err := json.Unmarshal(data, &t); err != nil || t.Ticket == "" {
		return "", fmt.Errorf("ticket: undecodable answer %.80q", data)
	}
	if player == "" {
		b.mu.Lock()
		b.rep.Player = t.Player
		b.mu.Unlock()
	}
	return t.Ticket, nil
}

func (b *Bot) playURL(ticket string, l link) string {
	u := *b.base.JoinPath("play")
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	default:
		u.Scheme = "ws"
	}
	q := url.Values{}
	if l.query != "" {
		q, _ = url.ParseQuery(l.query) // the redirect's: it names the server and may carry more
	}
	q.Set("ticket", ticket)
	if l.hint != "" && !q.Has(l.param) {
		q.Set(l.param, l.hint)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// welcomed records a welcome: the server, the gap since the last
// connection, and the bot's seat.
func (b *Bot) welcomed(c *conn, w welcome, l link) {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rep.Player == "" {
		b.rep.Player = w.Player
	}
	b.rep.Nodes = append(b.rep.Nodes, w.Node)
	detail := "mode " + l.mode
	if l.hint != "" {
		detail += ", asked for " + l.hint
	}
	if w.Room != "" {
		detail += ", in " + w.Room
	}
	b.eventLocked("welcome", w.Node, detail)
	if !l.ended.IsZero() {
		b.rep.Reconnects = append(b.rep.Reconnects, Reconnect{Cause: l.cause, Took: now.Sub(l.ended), Attempts: l.attempts})
	}
	if w.Room == "" {
		b.notifyLocked()
		return
	}
	switch rm := b.currentLocked(); {
	case rm != nil && rm.ID == w.Room:
		if !l.lost.IsZero() && l.room == w.Room {
			b.rep.Rejoins = append(b.rep.Rejoins, Rejoin{Room: w.Room, Took: now.Sub(l.lost), Connections: l.conns + 1})
			b.eventLocked("rejoin", w.Node, fmt.Sprintf("back in %s after %v", w.Room, now.Sub(l.lost).Round(time.Millisecond)))
		}
	default:
		if rm != nil {
			b.endRoomLocked(rm.ID, "lost")
		}
		b.seatLocked(w.Room, "", w.Node, now)
	}
	b.notifyLocked()
}

// The ways a session ends.
type endKind int

const (
	endStop     endKind = iota // Run returns nil
	endFatal                   // Run returns err
	endRedirect                // follow the redirect
	endDrop                    // the connection dropped
	endAsked                   // Bot.Drop
)

type sessionEnd struct {
	kind     endKind
	at       time.Time
	redirect redirectPacket
	err      error
}

func (e sessionEnd) cause() string {
	switch e.kind {
	case endRedirect:
		return "redirect"
	case endAsked:
		return "asked"
	}
	return "drop"
}

// The packets a bot reads.
type (
	redirectPacket struct {
		Node   string `json:"node"`
		Param  string `json:"param"`
		Reason string `json:"reason"`
		Ticket string `json:"ticket"`
		Query  string `json:"query"`
	}
	packet struct {
		Type     string   `json:"type"`
		Node     string   `json:"node"`
		Room     string   `json:"room"`
		Kind     string   `json:"kind"`
		Reason   string   `json:"reason"`
		Param    string   `json:"param"`
		Ticket   string   `json:"ticket"`
		Query    string   `json:"query"`
		Playlist string   `json:"playlist"`
		WaitedMS int64    `json:"waited_ms"`
		Code     string   `json:"code"`
		Host     string   `json:"host"`
		Members  []string `json:"members"`
		Playing  bool     `json:"playing"`
		Error    string   `json:"error"`
	}
)

// session plays on connection c until it ends.
func (b *Bot) session(ctx context.Context, c *conn, l link) sessionEnd {
	defer func() {
		c.ws.CloseNow()
		c.cancel()
		for range c.frames {
		}
	}()
	tick := time.NewTicker(time.Second / time.Duration(max(b.cfg.InputRate, 1)))
	defer tick.Stop()
	var (
		redirect   *redirectPacket
		redirected <-chan time.Time // the server did not close after its redirect
		lostCheck  <-chan time.Time // welcomed without the room the bot had
		confirm    <-chan time.Time // a moved queue place was not confirmed
		snap       *snapshot
		asked      bool
	)
	if rm, ok := b.seatedRoom(); ok && c.room != rm {
		lostCheck = time.After(time.Second) // unless a redirect takes us to it
	}
	b.restore(c, l, &confirm)
	b.flush(c)
	for {
		if ctx.Err() != nil {
			b.leave(c)
			return sessionEnd{kind: endStop, at: time.Now()}
		}
		select {
		case <-ctx.Done():
			b.leave(c)
			return sessionEnd{kind: endStop, at: time.Now()}

		case data, ok := <-c.frames:
			if !ok {
				return b.ended(c, redirect, asked)
			}
			var p packet
			if err := json.Unmarshal(data, &p); err != nil {
				b.event("garbage", c.node, fmt.Sprintf("%.80q", data))
				continue
			}
			switch p.Type {
			case "state":
				var s snapshot
				if json.Unmarshal(data, &s) == nil {
					snap = &s
					b.mu.Lock()
					if rm := b.currentLocked(); rm != nil {
						rm.Snapshots++
						b.countedLocked(rm.Snapshots)
					}
					b.mu.Unlock()
				}
			case "redirect":
				redirect = &redirectPacket{Node: p.Node, Param: p.Param, Reason: p.Reason, Ticket: p.Ticket, Query: p.Query}
				redirected = time.After(2 * time.Second)
				lostCheck = nil
				b.mu.Lock()
				b.rep.Redirects = append(b.rep.Redirects, Redirect{At: time.Now(), From: c.node, To: p.Node, Param: p.Param, Reason: p.Reason})
				b.eventLocked("redirect", c.node, "to "+p.Node+" ("+p.Reason+")")
				b.notifyLocked()
				b.mu.Unlock()
			case "queue.waiting":
				confirm = nil
			case "room_end":
				snap = nil
			}
			if b.packet(c, p) {
				b.leave(c)
				return sessionEnd{kind: endStop, at: time.Now()}
			}

		case <-tick.C:
			if redirect != nil {
				continue
			}
			b.mu.Lock()
			rm := b.currentLocked()
			player := b.rep.Player
			b.mu.Unlock()
			if rm == nil || rm.Node != c.node {
				continue
			}
			dx, dy, ok := b.steer.input(player, snap, time.Now())
			if !ok {
				continue
			}
			wctx, cancel := context.WithTimeout(context.Background(), b.cfg.WriteTimeout)
			err := writeJSON(wctx, c.ws, message{Type: "input", Data: map[string]float64{"dx": dx, "dy": dy}})
			cancel()
			if err == nil {
				b.mu.Lock()
				if rm := b.currentLocked(); rm != nil {
					rm.Inputs++
					b.countedLocked(rm.Inputs)
				}
				b.mu.Unlock()
			}

		case <-b.wake:
			b.mu.Lock()
			drop := b.dropping
			b.dropping = false
			b.mu.Unlock()
			if drop {
				asked = true
				b.event("drop", c.node, "asked")
				c.ws.CloseNow()
				continue
			}
			b.flush(c)

		case <-lostCheck:
			lostCheck = nil
			b.mu.Lock()
			if rm := b.currentLocked(); rm != nil && rm.ID != c.room {
				b.endRoomLocked(rm.ID, "lost")
				b.notifyLocked()
			}
			b.mu.Unlock()

		case <-confirm:
			confirm = nil
			b.requeue(c, "queue place not confirmed")

		case <-redirected:
			c.ws.CloseNow()
		}
	}
}

// ended classifies the end of a connection.
func (b *Bot) ended(c *conn, redirect *redirectPacket, asked bool) sessionEnd {
	now := time.Now()
	if redirect != nil {
		return sessionEnd{kind: endRedirect, at: now, redirect: *redirect}
	}
	if asked {
		return sessionEnd{kind: endAsked, at: now}
	}
	code := websocket.CloseStatus(c.readErr)
	var reason string
	if ce := (websocket.CloseError{}); errors.As(c.readErr, &ce) {
		reason = ce.Reason
	} else if c.readErr != nil {
		reason = c.readErr.Error()
	}
	if fatal(code) {
		b.event("closed", c.node, fmt.Sprintf("%d %s", code, reason))
		return sessionEnd{kind: endFatal, at: now, err: &CloseError{Node: c.node, Code: code, Reason: reason}}
	}
	b.mu.Lock()
	b.rep.Drops = append(b.rep.Drops, Drop{At: now, Node: c.node, Code: int(code), Reason: reason})
	b.eventLocked("dropped", c.node, fmt.Sprintf("%d %s", code, reason))
	b.notifyLocked()
	b.mu.Unlock()
	return sessionEnd{kind: endDrop, at: now}
}

// restore puts back, after a drop, what the server forgot: a queue place
// or a lobby membership. After a redirect that moved a queue place, it
// arms the confirmation timer instead; after a drain redirect that came
// before any server confirmed the queue request, it queues again at once.
func (b *Bot) restore(c *conn, l link, confirm *<-chan time.Time) {
	if l.cause == "" || c.room != "" {
		return
	}
	b.mu.Lock()
	queued, lobby, confirmed := b.queued, b.rep.Lobby, b.confirmed
	pending := slices.ContainsFunc(b.outbox, func(m message) bool { return m.Type == "queue" })
	b.mu.Unlock()
	switch {
	case l.cause == "redirect" && queued != "" && l.reason == "drain" && !confirmed && !pending:
		// The queue request crossed the redirect a draining server sends
		// at its drain's end (it reads no request from then on): it died
		// with the connection and the redirect moved no place.
		b.mu.Lock()
		b.rep.Requeues++
		b.outbox = append([]message{{Type: "queue", Data: map[string]string{"playlist": queued}}}, b.outbox...)
		b.eventLocked("requeue", c.node, "sent away by a draining server before the queue was confirmed")
		b.mu.Unlock()
	case l.cause == "redirect" && queued != "" && (l.reason == "queue" || l.reason == "drain"):
		*confirm = time.After(b.cfg.Confirm)
	case l.cause == "redirect":
	case queued != "":
		b.mu.Lock()
		b.rep.Requeues++
		b.confirmed = false
		b.outbox = append([]message{{Type: "queue", Data: map[string]string{"playlist": queued}}}, b.outbox...)
		b.eventLocked("requeue", c.node, "after a drop")
		b.mu.Unlock()
	case lobby.Code != "" && !lobby.Playing:
		b.mu.Lock()
		b.outbox = append([]message{{Type: "lobby.join", Data: map[string]string{"code": lobby.Code}}}, b.outbox...)
		b.eventLocked("rejoin", c.node, "lobby "+lobby.Code+" after a drop")
		b.mu.Unlock()
	}
}

func (b *Bot) requeue(c *conn, why string) {
	b.mu.Lock()
	queued := b.queued
	if queued != "" {
		b.rep.Requeues++
		b.confirmed = false
		b.outbox = append(b.outbox, message{Type: "queue", Data: map[string]string{"playlist": queued}})
		b.eventLocked("requeue", c.node, why)
		b.notifyLocked()
	}
	b.mu.Unlock()
	b.flush(c)
}

// flush sends the commands waiting in the outbox.
//
// Writes are bounded by a timeout of their own, never by Run's context: a
// write whose context ends closes the connection at once, and the bot must
// still be able to send its leave when it stops.
func (b *Bot) flush(c *conn) {
	b.mu.Lock()
	out := b.outbox
	b.outbox = nil
	b.mu.Unlock()
	for i, m := range out {
		wctx, cancel := context.WithTimeout(context.Background(), b.cfg.WriteTimeout)
		err := writeJSON(wctx, c.ws, m)
		cancel()
		if err != nil {
			// The connection is going; send the rest on the next one.
			b.mu.Lock()
			b.outbox = append(out[i:], b.outbox...)
			b.mu.Unlock()
			return
		}
	}
}

// leave gives up the bot's seat and closes the connection properly, when
// the bot stops.
func (b *Bot) leave(c *conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	b.mu.Lock()
	rm := b.currentLocked()
	if rm != nil {
		b.endRoomLocked(rm.ID, "left")
	}
	b.mu.Unlock()
	if rm != nil {
		writeJSON(ctx, c.ws, message{Type: "leave", Data: struct{}{}})
	}
	c.ws.Close(websocket.StatusNormalClosure, "bye")
}

// packet records a packet other than a state snapshot. It reports whether
// the bot has played its matches.
func (b *Bot) packet(c *conn, p packet) (done bool) {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	switch p.Type {
	case "state", "redirect":
		return false
	case "room":
		if rm := b.currentLocked(); rm != nil && rm.ID == p.Room {
			return false
		} else if rm != nil {
			b.endRoomLocked(rm.ID, "lost")
		}
		b.seatLocked(p.Room, p.Kind, c.node, now)
		b.eventLocked("room", c.node, p.Room+" ("+p.Kind+")")
	case "room_end":
		b.endRoomLocked(p.Room, p.Reason)
		b.eventLocked("room_end", c.node, p.Room+": "+p.Reason)
		done = b.cfg.Matches > 0 && b.rep.Ended() >= b.cfg.Matches
	case "queue.waiting":
		w := Wait{At: now, Node: p.Node, Playlist: p.Playlist, Waited: time.Duration(p.WaitedMS) * time.Millisecond}
		if w.Node == "" {
			w.Node = c.node
		}
		b.rep.Waits = append(b.rep.Waits, w)
		b.confirmed = true
		b.eventLocked("waiting", c.node, fmt.Sprintf("%s, waited %v", p.Playlist, w.Waited))
	case "queue.left":
		b.queued = ""
		b.eventLocked("unqueued", c.node, p.Playlist)
	case "lobby.state":
		b.rep.Lobby = Lobby{At: now, Code: p.Code, Host: p.Host, Members: p.Members, Playing: p.Playing, Room: p.Room, Node: p.Node}
		b.eventLocked("lobby", c.node, fmt.Sprintf("%s host %s members %v playing %v", p.Code, p.Host, p.Members, p.Playing))
	case "lobby.left":
		b.rep.Lobby = Lobby{}
		b.eventLocked("lobby_left", c.node, p.Code)
	case "queue.error", "lobby.error":
		b.rep.Errors = append(b.rep.Errors, p.Type+": "+p.Error)
		b.eventLocked("error", c.node, p.Type+": "+p.Error)
	case "server_draining":
		b.rep.Draining = append(b.rep.Draining, c.node)
		b.eventLocked("draining", c.node, "")
	default:
		b.eventLocked("packet", c.node, p.Type)
	}
	b.notifyLocked()
	return done
}

// seatLocked records a new seat. b.mu must be held.
func (b *Bot) seatLocked(id, kind, node string, now time.Time) {
	rm := Room{ID: id, Kind: kind, Node: node, Started: now}
	if b.queued != "" {
		rm.Queued = now.Sub(b.queuedAt)
		b.queued = ""
	}
	b.rep.Rooms = append(b.rep.Rooms, rm)
}

// currentLocked returns the room the bot is seated in, or nil. b.mu must
// be held.
func (b *Bot) currentLocked() *Room {
	if n := len(b.rep.Rooms); n > 0 && b.rep.Rooms[n-1].Ended.IsZero() {
		return &b.rep.Rooms[n-1]
	}
	return nil
}

// endRoomLocked ends the current room, if its id is id or id is "". b.mu
// must be held.
func (b *Bot) endRoomLocked(id, reason string) {
	if rm := b.currentLocked(); rm != nil && (id == "" || rm.ID == id) {
		rm.Ended, rm.Reason = time.Now(), reason
	}
}

const maxEvents = 5000

func (b *Bot) event(kind, node, detail string) {
	b.mu.Lock()
	b.eventLocked(kind, node, detail)
	b.notifyLocked()
	b.mu.Unlock()
}

func (b *Bot) eventLocked(kind, node, detail string) {
	if len(b.rep.Events) >= maxEvents {
		b.rep.Events = append(b.rep.Events[:0], b.rep.Events[maxEvents/2:]...)
	}
	b.rep.Events = append(b.rep.Events, Event{At: time.Now(), Kind: kind, Node: node, Detail: detail})
	b.logger.Debug(kind, "player_id", b.rep.Player, "node_id", node, "detail", detail)
}

// countedLocked tells waiters of a counter's first step and of every 20th
// (about once a second), not of every snapshot or input.
func (b *Bot) countedLocked(n int) {
	if n == 1 || n%20 == 0 {
		b.notifyLocked()
	}
}

func (b *Bot) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}
