package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/coder/websocket"
)

// This file is one welcomed connection played on until it ends: the
// packets read, the commands sent, the timers, and how the end is told
// apart (a redirect, a drop, Bot.Drop, a fatal close, Run's end).

// The ways a session ends.
type endKind int

const (
	endStop     endKind = iota // Run returns nil
	endFatal                   // Run returns err
	endRedirect                // follow the redirect
	endDrop                    // the connection dropped
	endAsked                   // Bot.Drop
)

// sessionEnd is how and when a session ended.
type sessionEnd struct {
	kind     endKind
	at       time.Time
	redirect redirectPacket
	err      error
}

// cause is the end's cause as the next welcome's Reconnect records it.
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

// session is the state of play on one connection. It is used by Run's
// goroutine only.
type session struct {
	b          *Bot
	c          *conn
	redirect   *redirectPacket
	redirected <-chan time.Time // the server did not close after its redirect
	lostCheck  <-chan time.Time // welcomed without the room the bot had
	confirm    <-chan time.Time // a moved queue place was not confirmed
	snap       *snapshot        // the last state packet of the current room
	asked      bool             // Bot.Drop cut the connection
}

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
	s := &session{b: b, c: c}
	if rm, ok := b.seatedRoom(); ok && c.room != rm {
		s.lostCheck = time.After(time.Second) // unless a redirect takes us to it
	}
	b.restore(c, l, &s.confirm)
	b.flush(c)
	for {
		if ctx.Err() != nil {
			return s.stop()
		}
		select {
		case <-ctx.Done():
			return s.stop()

		case data, ok := <-c.frames:
			if !ok {
				return b.ended(c, s.redirect, s.asked)
			}
			if s.read(data) {
				return s.stop()
			}

		case <-tick.C:
			s.sendInput()

		case <-b.wake:
			s.woken()

		case <-s.lostCheck:
			s.lostCheck = nil
			s.checkLost()

		case <-s.confirm:
			s.confirm = nil
			b.requeue(c, "queue place not confirmed")

		case <-s.redirected:
			c.ws.CloseNow()
		}
	}
}

// stop leaves the bot's room and ends the session for Run to return.
func (s *session) stop() sessionEnd {
	s.b.leave(s.c)
	return sessionEnd{kind: endStop, at: time.Now()}
}

// read handles one frame from the server. It reports whether the bot has
// played its matches.
func (s *session) read(data []byte) (done bool) {
	b, c := s.b, s.c
	var p packet
	if err := json.Unmarshal(data, &p); err != nil {
		b.event("garbage", c.node, fmt.Sprintf("%.80q", data))
		return false
	}
	switch p.Type {
	case "state":
		var snap snapshot
		if json.Unmarshal(data, &snap) == nil {
			s.snap = &snap
			b.stateInRoom(snap.Step)
		}
	case "redirect":
		s.redirect = &redirectPacket{Node: p.Node, Param: p.Param, Reason: p.Reason, Ticket: p.Ticket, Query: p.Query}
		s.redirected = time.After(2 * time.Second)
		s.lostCheck = nil
		b.mu.Lock()
		b.rep.Redirects = append(b.rep.Redirects, Redirect{At: time.Now(), From: c.node, To: p.Node, Param: p.Param, Reason: p.Reason})
		b.pausing = 0
		if rm := b.currentLocked(); rm != nil && !rm.LastState.IsZero() {
			b.pausing = len(b.rep.Redirects)
		}
		b.eventLocked("redirect", c.node, "to "+p.Node+" ("+p.Reason+")")
		b.notifyLocked()
		b.mu.Unlock()
	case "queue.waiting":
		s.confirm = nil
	case "room_end":
		s.snap = nil
	}
	return b.packet(c, p)
}

// woken cuts the connection when Bot.Drop asked for it, and otherwise
// sends the commands waiting in the outbox.
func (s *session) woken() {
	b := s.b
	b.mu.Lock()
	drop := b.dropping
	b.dropping = false
	b.mu.Unlock()
	if drop {
		s.asked = true
		b.event("drop", s.c.node, "asked")
		s.c.ws.CloseNow()
		return
	}
	b.flush(s.c)
}

// checkLost ends the bot's room as lost when the connection was welcomed
// without it and no redirect came to take the bot back to it.
func (s *session) checkLost() {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if rm := b.currentLocked(); rm != nil && rm.ID != s.c.room {
		b.endRoomLocked(rm.ID, "lost")
		b.notifyLocked()
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
	code, reason := closeOf(c.readErr)
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

// flush sends the commands waiting in the outbox.
func (b *Bot) flush(c *conn) {
	b.mu.Lock()
	out := b.outbox
	b.outbox = nil
	b.mu.Unlock()
	for i, m := range out {
		if err := b.write(c, m); err != nil {
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
