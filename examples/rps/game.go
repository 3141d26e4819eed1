package main

import (
	"slices"
	"time"

	"github.com/muster-gg/muster/room"
)

// The throws, and what each beats.
var beats = map[string]string{"rock": "scissors", "paper": "rock", "scissors": "paper"}

// The match's rules that are not configured.
const (
	winRounds = 2 // best of three
	maxRounds = 9 // drawn rounds do not count; a match ends after this many
)

// RPS is the game: rock-paper-scissors, best of three, one throw a turn.
// A player who has not thrown when the turn's time is up loses the round
// (both: a drawn round); a player away for Rules.Forfeit loses the match.
type RPS struct {
	Rules   Rules
	Results *Results // where RoomEnded saves each match; nil saves nothing
}

// Match is the state of one room.
type Match struct {
	seats   []*Seat
	round   int        // the round being played, from 1; 0 before both joined
	turn    room.Timer // the round's time limit
	last    map[string]string
	history []Round
	winner  string
	over    bool // the match ended: nothing counts any more
	changed bool // a state is due to the players
}

// Seat is one player in a match.
type Seat struct {
	ID    string
	Wins  int
	throw string     // this round's throw, "" before it
	away  bool       // not connected to the room
	gone  room.Timer // runs while away: the forfeit
}

// Round is how one round ended: each player's throw ("" for none: it ran
// out of time) and the round's winner ("" for a draw).
type Round struct {
	Throws map[string]string `json:"throws"`
	Winner string            `json:"winner,omitempty"`
}

// Input is what a client sends: its throw for a round. The round number
// keeps a throw sent late (or queued while reconnecting) out of the next.
type Input struct {
	Round int    `json:"round"`
	Throw string `json:"throw"`
}

// NewSim implements room.Game.
func (RPS) NewSim(room.Info) *Match { return &Match{} }

// Join implements room.Game. A player seated here while it is still on
// its way (the match was opened on this server for it) counts as away
// until it arrives.
func (g RPS) Join(r *room.Room[*Match, Input, *Seat], id string) *Seat {
	m := r.Sim()
	s := &Seat{ID: id}
	if !r.Present(id) {
		s.away = true
		s.gone.Start(r, g.Rules.Forfeit)
	}
	m.seats = append(m.seats, s)
	if len(m.seats) == 2 && m.round == 0 {
		g.nextRound(r)
	}
	return s
}

// Leave implements room.Game: a player who leaves forfeits.
func (RPS) Leave(r *room.Room[*Match, Input, *Seat], s *Seat) {
	m := r.Sim()
	m.seats = slices.DeleteFunc(m.seats, func(o *Seat) bool { return o == s })
	if !m.over && len(m.seats) == 1 {
		m.finish(r, m.seats[0].ID, "forfeit by "+s.ID)
	}
}

// Input implements room.Game: a throw for the round being played.
func (g RPS) Input(r *room.Room[*Match, Input, *Seat], s *Seat, in Input) {
	m := r.Sim()
	if m.over || in.Round != m.round || s.throw != "" || beats[in.Throw] == "" {
		return
	}
	s.throw = in.Throw
	m.changed = true
	if len(m.seats) == 2 && m.seats[0].throw != "" && m.seats[1].throw != "" {
		g.endRound(r)
	}
}

// FixedStep implements room.Game: the turn's time limit and the forfeits.
func (g RPS) FixedStep(r *room.Room[*Match, Input, *Seat]) {
	m := r.Sim()
	if m.over {
		return
	}
	for _, s := range m.seats {
		if s.away && r.Present(s.ID) { // arrived after its Join
			g.PlayerBack(r, s)
		}
		if s.gone.Fired(r) {
			if o := m.other(s); o != nil {
				m.finish(r, o.ID, "forfeit by "+s.ID)
			} else {
				m.finish(r, "", "forfeit by "+s.ID)
			}
			return
		}
	}
	if m.turn.Fired(r) {
		g.endRound(r) // who has not thrown lost the turn
	}
}

// AfterSteps implements room.AfterStepper: the state, when it changed.
func (RPS) AfterSteps(r *room.Room[*Match, Input, *Seat]) {
	m := r.Sim()
	if m.changed {
		m.changed = false
		r.Broadcast(m.state(r))
	}
}

// PlayerAway implements room.Awayer: the player keeps its seat, and the
// forfeit runs.
func (g RPS) PlayerAway(r *room.Room[*Match, Input, *Seat], s *Seat) {
	s.away = true
	s.gone.Start(r, g.Rules.Forfeit)
	r.Sim().changed = true
}

// PlayerBack implements room.Returner: the forfeit stops, and the player
// gets the state (with every other player).
func (RPS) PlayerBack(r *room.Room[*Match, Input, *Seat], s *Seat) {
	s.away = false
	s.gone.Stop()
	r.Sim().changed = true
}

// RoomEnded implements room.RoomEnder: the match's result is saved.
func (g RPS) RoomEnded(r *room.Room[*Match, Input, *Seat], reason string) {
	m := r.Sim()
	res := Result{Room: r.ID(), Kind: r.Info().Kind, Winner: m.winner, Reason: reason, Rounds: m.history, Score: map[string]int{}}
	for _, s := range m.seats {
		res.Players = append(res.Players, s.ID)
		res.Score[s.ID] = s.Wins
	}
	g.Results.Save(res)
}

// ServerDraining implements room.DrainNotifier.
func (RPS) ServerDraining() room.Packet { return map[string]string{"type": "server_draining"} }

// nextRound starts the next round and its turn.
func (g RPS) nextRound(r *room.Room[*Match, Input, *Seat]) {
	m := r.Sim()
	m.round++
	for _, s := range m.seats {
		s.throw = ""
	}
	m.turn.Start(r, g.Rules.Turn)
	m.changed = true
}

// endRound scores the round (a player without a throw loses it) and ends
// the match or starts the next round.
func (g RPS) endRound(r *room.Room[*Match, Input, *Seat]) {
	m := r.Sim()
	m.turn.Stop()
	rd := Round{Throws: map[string]string{}}
	for _, s := range m.seats {
		rd.Throws[s.ID] = s.throw
	}
	if len(m.seats) == 2 {
		a, b := m.seats[0], m.seats[1]
		switch {
		case a.throw == b.throw:
		case b.throw == "" || beats[a.throw] == b.throw:
			rd.Winner = a.ID
		case a.throw == "" || beats[b.throw] == a.throw:
			rd.Winner = b.ID
		}
	}
	m.history = append(m.history, rd)
	m.last = rd.Throws
	for _, s := range m.seats {
		if s.ID == rd.Winner {
			s.Wins++
			if s.Wins >= winRounds {
				m.finish(r, s.ID, "won by "+s.ID)
				return
			}
		}
	}
	if m.round >= maxRounds {
		m.finish(r, "", "draw")
		return
	}
	g.nextRound(r)
}

// finish ends the match: the last state, then the room's end.
func (m *Match) finish(r *room.Room[*Match, Input, *Seat], winner, reason string) {
	m.winner, m.over = winner, true
	m.turn.Stop()
	m.changed = true
	r.End(reason)
}

// other returns the opponent of s, or nil.
func (m *Match) other(s *Seat) *Seat {
	for _, o := range m.seats {
		if o != s {
			return o
		}
	}
	return nil
}

// State is the packet every player gets when the match changes.
type State struct {
	Type    string            `json:"type"` // "rps"
	Round   int               `json:"round"`
	TurnMS  int64             `json:"turn_ms"` // time left to throw
	Players []PlayerState     `json:"players"`
	Last    map[string]string `json:"last,omitempty"` // the last round's throws
	Winner  string            `json:"winner,omitempty"`
	Over    bool              `json:"over,omitempty"`
}

// PlayerState is one player in a State; its throw stays hidden until the
// round ends.
type PlayerState struct {
	ID     string `json:"id"`
	Wins   int    `json:"wins"`
	Thrown bool   `json:"thrown"`
	Away   bool   `json:"away"`
}

func (m *Match) state(r *room.Room[*Match, Input, *Seat]) State {
	st := State{Type: "rps", Round: m.round, TurnMS: m.turn.Left(r).Milliseconds(), Last: m.last, Winner: m.winner, Over: m.over}
	for _, s := range m.seats {
		st.Players = append(st.Players, PlayerState{ID: s.ID, Wins: s.Wins, Thrown: s.throw != "", Away: s.away})
	}
	return st
}

// defaultRules are the rules without configuration.
var defaultRules = Rules{Turn: 10 * time.Second, Forfeit: 30 * time.Second}
