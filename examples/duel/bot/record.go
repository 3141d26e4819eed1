package bot

import (
	"fmt"
	"time"
)

// This file keeps the bot's Report: what each packet, seat and event does
// to it, and the waking of Wait at each change. Every method ending in
// Locked needs b.mu held.

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
		if !b.regainLocked(p.Room, c.node) {
			b.seatLocked(p.Room, p.Kind, c.node, now)
		}
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

// seatedRoom returns the room the bot is seated in.
func (b *Bot) seatedRoom() (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rm := b.currentLocked(); rm != nil {
		return rm.ID, true
	}
	return "", false
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

// regainLocked takes back room id as the bot's current room if it is the
// last one and the bot gave it up for lost: its server died and another
// resumed it from a checkpoint. It reports whether it did. b.mu must be
// held.
func (b *Bot) regainLocked(id, node string) bool {
	n := len(b.rep.Rooms)
	if n == 0 || b.rep.Rooms[n-1].ID != id || b.rep.Rooms[n-1].Reason != "lost" {
		return false
	}
	last := &b.rep.Rooms[n-1]
	last.Ended, last.Reason, last.Node = time.Time{}, "", node
	last.Regained++
	b.eventLocked("regained", node, "back in "+id+", given up for lost")
	return true
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

// countInRoom adds one to the counter of the current room that counter
// picks (its inputs or its snapshots), if the bot is seated.
func (b *Bot) countInRoom(counter func(*Room) *int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rm := b.currentLocked(); rm != nil {
		n := counter(rm)
		*n++
		b.countedLocked(*n)
	}
}

// stateInRoom counts a state packet of the current room, if the bot is
// seated, and the time since the room's last one.
func (b *Bot) stateInRoom(step uint64) {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if rm := b.currentLocked(); rm != nil {
		if !rm.LastState.IsZero() {
			rm.Gap = max(rm.Gap, now.Sub(rm.LastState))
		}
		if b.pausing > 0 {
			b.rep.Redirects[b.pausing-1].Pause = now.Sub(rm.LastState)
			b.pausing = 0
		}
		if step < rm.Step {
			rm.Rewind = max(rm.Rewind, rm.Step-step)
		}
		rm.LastState, rm.Step = now, step
		rm.Snapshots++
		b.countedLocked(rm.Snapshots)
	}
}

const maxEvents = 5000

// event logs an event and wakes Wait.
func (b *Bot) event(kind, node, detail string) {
	b.mu.Lock()
	b.eventLocked(kind, node, detail)
	b.notifyLocked()
	b.mu.Unlock()
}

// eventLocked logs an event in the report (keeping at most maxEvents, the
// newest) and at debug level.
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

// notifyLocked wakes every Wait: the report changed.
func (b *Bot) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}
