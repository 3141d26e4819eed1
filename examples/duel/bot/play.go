package bot

import (
	"math"
	"math/rand/v2"
	"time"
)

// Style is how a bot steers in a match.
type Style string

// The steering styles.
const (
	// StyleChase heads for the orb from the bot's position in the last
	// snapshot: matches end, as a player would end them.
	StyleChase Style = "chase"
	// StyleRandom heads in a random direction, changed every half second
	// or so: matches rarely end.
	StyleRandom Style = "random"
	// StyleIdle sends no input: a player who looks away.
	StyleIdle Style = "idle"
)

// fighter and snapshot are the parts of the duel's state packet a bot
// steers by.
type (
	fighter struct {
		ID    string  `json:"ID"`
		X     float64 `json:"X"`
		Y     float64 `json:"Y"`
		Score int     `json:"Score"`
	}
	snapshot struct {
		Step    uint64    `json:"step"`
		Players []fighter `json:"players"`
		OrbX    float64   `json:"orbX"`
		OrbY    float64   `json:"orbY"`
		Winner  string    `json:"winner"`
	}
)

// sendInput sends the input the bot's steering gives for the last
// snapshot, when the bot is seated in a room on this connection's server
// and no redirect is on its way.
func (s *session) sendInput() {
	if s.redirect != nil {
		return
	}
	b := s.b
	b.mu.Lock()
	rm := b.currentLocked()
	player := b.rep.Player
	b.mu.Unlock()
	if rm == nil || rm.Node != s.c.node {
		return
	}
	dx, dy, ok := b.steer.input(player, s.snap, time.Now())
	if !ok {
		return
	}
	if b.write(s.c, message{Type: "input", Data: map[string]float64{"dx": dx, "dy": dy}}) == nil {
		b.countInRoom(func(rm *Room) *int { return &rm.Inputs })
	}
}

// steering turns snapshots into inputs. It is used by Run's goroutine only.
type steering struct {
	style  Style
	rng    *rand.Rand
	dx, dy float64
	next   time.Time // when a random direction changes
}

// input returns the direction to send for player me after snapshot s
// (nil before the first), and false when nothing is to be sent.
func (st *steering) input(me string, s *snapshot, now time.Time) (dx, dy float64, ok bool) {
	switch st.style {
	case StyleIdle:
		return 0, 0, false
	case StyleRandom:
		if now.After(st.next) {
			a := st.rng.Float64() * 2 * math.Pi
			st.dx, st.dy = math.Cos(a), math.Sin(a)
			st.next = now.Add(300*time.Millisecond + time.Duration(st.rng.IntN(400))*time.Millisecond)
		}
		return st.dx, st.dy, true
	}
	if s == nil {
		return 0, 0, true
	}
	for _, f := range s.Players {
		if f.ID != me {
			continue
		}
		x, y := s.OrbX-f.X, s.OrbY-f.Y
		n := math.Hypot(x, y)
		if n < 1 {
			return 0, 0, true
		}
		return x / n, y / n, true
	}
	return 0, 0, true
}
