package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/muster-gg/muster/room"
)

// The duel implements room.Migrator: a draining server moves its matches
// to the other servers, and the players go on playing them there, after a
// pause of a few ticks.

// matchSnapshot is a Match as it moves: the fighters, the orb, the random
// source (so the orb lands where it would have), the winner.
type matchSnapshot struct {
	Players []Fighter `json:"players"`
	OrbX    float64   `json:"orbX"`
	OrbY    float64   `json:"orbY"`
	RNG     []byte    `json:"rng"`
	Winner  string    `json:"winner,omitempty"`
}

// Snapshot implements room.Migrator.
func (Duel) Snapshot(r *room.Room[*Match, Input, *Fighter]) ([]byte, error) {
	m := r.Sim()
	rng, err := m.src.MarshalBinary()
	if err != nil {
		return nil, err
	}
	s := matchSnapshot{OrbX: m.orbX, OrbY: m.orbY, RNG: rng, Winner: m.winner}
	for _, f := range m.players {
		s.Players = append(s.Players, *f)
	}
	return json.Marshal(s)
}

// Restore implements room.Migrator: the match as it was, each fighter the
// value of its player.
func (Duel) Restore(_ room.Info, data []byte) (*Match, map[string]*Fighter, error) {
	var s matchSnapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, nil, err
	}
	src := &rand.PCG{}
	if err := src.UnmarshalBinary(s.RNG); err != nil {
		return nil, nil, fmt.Errorf("rng: %w", err)
	}
	m := &Match{orbX: s.OrbX, orbY: s.OrbY, src: src, rng: rand.New(src), winner: s.Winner}
	fighters := make(map[string]*Fighter, len(s.Players))
	for _, f := range s.Players {
		if f.ID == "" || fighters[f.ID] != nil || !finite(f.X, f.Y, f.DX, f.DY, s.OrbX, s.OrbY) {
			return nil, nil, errors.New("a fighter without an id, twice, or off the numbers")
		}
		f := f
		m.players = append(m.players, &f)
		fighters[f.ID] = &f
	}
	return m, fighters, nil
}

func finite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
