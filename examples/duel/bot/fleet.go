package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// This file is how the bot lives in a fleet: it reconnects after a drop,
// follows redirects, waits before going back to a server the relay could
// not reach, times its way back to its room, and puts back the queue
// place or the lobby membership a server forgot.

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
	backoff  time.Duration // the wait before the next attempt after a failed one
}

// run plays one connection after another until ctx ends, the bot has
// played its matches, or a server refuses it for good.
func (b *Bot) run(ctx context.Context) error {
	l := link{mode: "new", param: "node"}
	for ctx.Err() == nil {
		c, err := b.reconnect(ctx, &l)
		if c == nil {
			return err
		}
		l.conns++
		end := b.session(ctx, c, l)
		switch end.kind {
		case endStop:
			return nil
		case endFatal:
			return end.err
		}
		b.carryOver(ctx, &l, c, end)
	}
	return nil
}

// reconnect makes connection attempts, with a doubling wait after each
// failed one, until one is welcomed. It returns a nil conn, and a nil
// error, when ctx ends first; a nil conn and a *CloseError when a server
// refused the bot in a way no retry can mend.
func (b *Bot) reconnect(ctx context.Context, l *link) (*conn, error) {
	for ctx.Err() == nil {
		l.attempts++
		c, err := b.connect(ctx, *l)
		l.ticket, l.query = "", "" // a redirect's ticket is good for one attempt: a retry asks for a new one
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		if ce := (*CloseError)(nil); errors.As(err, &ce) && fatal(ce.Code) {
			return nil, ce
		}
		l.backoff = min(max(2*l.backoff, 50*time.Millisecond), b.cfg.RetryMax)
		sleep(ctx, l.backoff)
	}
	return nil, nil
}

// carryOver sets l for the connection after c, which ended as end: the
// hello mode, the server to ask for, and the room the bot is on its way
// back to.
func (b *Bot) carryOver(ctx context.Context, l *link, c *conn, end sessionEnd) {
	var unreachable string // a server the relay could not reach for us
	if l.hint != "" && c.node != l.hint {
		unreachable = l.hint // the relay could not reach it and served us here
	}
	seated, _ := b.seatedRoom()
	if onTheWay := l.room != "" && seated == l.room && c.room != l.room; !onTheWay {
		l.room, l.lost, l.conns = seated, end.at, 0
	}
	l.mode, l.ended, l.attempts, l.cause, l.reason = "rejoin", end.at, 0, end.cause(), end.redirect.Reason
	l.backoff = 0
	switch {
	case end.kind == endRedirect:
		b.followRedirect(ctx, l, c, end.redirect, unreachable)
	case b.cfg.Anywhere:
		l.hint = ""
	default:
		l.hint = c.node
	}
}

// followRedirect sets l to connect where redirect r sends the bot, with
// its ticket and query. Sent back to unreachable, the server the relay
// could not reach for the bot, it waits first.
func (b *Bot) followRedirect(ctx context.Context, l *link, c *conn, r redirectPacket, unreachable string) {
	l.hint = r.Node
	if r.Param != "" {
		l.param = r.Param
	}
	l.ticket, l.query = r.Ticket, r.Query
	if l.hint == "" || l.hint != unreachable {
		l.wait = 0
		return
	}
	// Sent back to a server the relay could not reach: it died and the
	// fleet has not noticed yet. Wait a little, as a person would, instead
	// of bouncing at full speed.
	l.backoff = min(max(2*l.wait, 50*time.Millisecond), b.cfg.RetryMax)
	l.wait = l.backoff
	b.event("bounce", c.node, fmt.Sprintf("sent back to unreachable %s; waiting %v", l.hint, l.backoff))
	sleep(ctx, l.backoff)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// welcomed records a welcome: the server, the gap since the last
// connection, and the bot's seat.
func (b *Bot) welcomed(c *conn, w Welcome, l link) {
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
		// A room that moved (a redirect, reason migrate) runs on the
		// server that welcomed the bot back into it now.
		rm.Node = w.Node
		if !l.lost.IsZero() && l.room == w.Room {
			b.rep.Rejoins = append(b.rep.Rejoins, Rejoin{Room: w.Room, Took: now.Sub(l.lost), Connections: l.conns + 1})
			b.eventLocked("rejoin", w.Node, fmt.Sprintf("back in %s after %v", w.Room, now.Sub(l.lost).Round(time.Millisecond)))
		}
	default:
		if rm != nil {
			b.endRoomLocked(rm.ID, "lost")
		}
		if !b.regainLocked(w.Room, w.Node) {
			b.seatLocked(w.Room, "", w.Node, now)
		}
	}
	b.notifyLocked()
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
		b.sendFirst(queueMessage(queued), func() { b.rep.Requeues++ },
			"requeue", c.node, "sent away by a draining server before the queue was confirmed")
	case l.cause == "redirect" && queued != "" && (l.reason == "queue" || l.reason == "drain"):
		*confirm = time.After(b.cfg.Confirm)
	case l.cause == "redirect":
	case queued != "":
		b.sendFirst(queueMessage(queued), func() { b.rep.Requeues++; b.confirmed = false },
			"requeue", c.node, "after a drop")
	case lobby.Code != "" && !lobby.Playing:
		b.sendFirst(message{Type: "lobby.join", Data: map[string]string{"code": lobby.Code}}, nil,
			"rejoin", c.node, "lobby "+lobby.Code+" after a drop")
	}
}

// sendFirst applies apply (under b.mu), puts m at the head of the outbox
// and logs the event kind.
func (b *Bot) sendFirst(m message, apply func(), kind, node, detail string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if apply != nil {
		apply()
	}
	b.outbox = append([]message{m}, b.outbox...)
	b.eventLocked(kind, node, detail)
}

// requeue queues again for the playlist the bot waits for, if any, and
// sends it at once.
func (b *Bot) requeue(c *conn, why string) {
	b.mu.Lock()
	queued := b.queued
	if queued != "" {
		b.rep.Requeues++
		b.confirmed = false
		b.outbox = append(b.outbox, queueMessage(queued))
		b.eventLocked("requeue", c.node, why)
		b.notifyLocked()
	}
	b.mu.Unlock()
	b.flush(c)
}
