package main

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/muster-gg/muster/room"
)

// The arena, in pixels, and the rules.
const (
	arenaW, arenaH = 800, 500
	radius         = 18
	orbRadius      = 10
	speed          = 240 // pixels per second
	winScore       = 5
	stepHz         = 60
	snapshotEvery  = 3 // 60 Hz steps, 20 Hz snapshots
)

// Duel is the game: two (or four) players race to touch the orb; the first
// to five wins.
type Duel struct{}

// Match is the state of one room.
type Match struct {
	players []*Fighter
	orbX    float64
	orbY    float64
	src     *rand.PCG // rng's source, which a snapshot keeps
	rng     *rand.Rand
	winner  string
}

// Fighter is one player in a match.
type Fighter struct {
	ID     string
	X, Y   float64
	DX, DY float64
	Score  int
}

// Input is what a client sends: the direction it wants to move in.
type Input struct {
	DX float64 `json:"dx"`
	DY float64 `json:"dy"`
}

// NewSim implements room.Game.
func (Duel) NewSim(info room.Info) *Match {
	h := fnv.New64a()
	h.Write([]byte(info.ID))
	src := rand.NewPCG(h.Sum64(), 7)
	m := &Match{src: src, rng: rand.New(src)}
	m.placeOrb()
	return m
}

func (m *Match) placeOrb() {
	m.orbX = orbRadius + m.rng.Float64()*(arenaW-2*orbRadius)
	m.orbY = orbRadius + m.rng.Float64()*(arenaH-2*orbRadius)
}

// Join implements room.Game: players start on alternate sides.
func (Duel) Join(r *room.Room[*Match, Input, *Fighter], id string) *Fighter {
	m := r.Sim()
	f := &Fighter{ID: id, Y: arenaH / 2, X: arenaW / 4}
	if len(m.players)%2 == 1 {
		f.X = 3 * arenaW / 4
	}
	m.players = append(m.players, f)
	return f
}

// Leave implements room.Game: the fighter leaves the arena. A match whose
// players all left is ended by the host (room.ReasonAbandoned).
func (Duel) Leave(r *room.Room[*Match, Input, *Fighter], f *Fighter) {
	m := r.Sim()
	m.players = slices.DeleteFunc(m.players, func(p *Fighter) bool { return p == f })
}

// Input implements room.Game.
func (Duel) Input(_ *room.Room[*Match, Input, *Fighter], f *Fighter, in Input) {
	if math.IsNaN(in.DX) || math.IsNaN(in.DY) {
		return
	}
	f.DX, f.DY = clamp(in.DX, -1, 1), clamp(in.DY, -1, 1)
	if n := math.Hypot(f.DX, f.DY); n > 1 {
		f.DX, f.DY = f.DX/n, f.DY/n
	}
}

// FixedStep implements room.Game: move, touch the orb, win.
func (Duel) FixedStep(r *room.Room[*Match, Input, *Fighter]) {
	m := r.Sim()
	if m.winner != "" {
		return
	}
	dt := 1.0 / stepHz
	for _, f := range m.players {
		f.X = clamp(f.X+f.DX*speed*dt, radius, arenaW-radius)
		f.Y = clamp(f.Y+f.DY*speed*dt, radius, arenaH-radius)
		if math.Hypot(f.X-m.orbX, f.Y-m.orbY) < radius+orbRadius {
			f.Score++
			m.placeOrb()
			if f.Score >= winScore {
				m.winner = f.ID
				r.Broadcast(m.snapshot(r.Step()))
				r.End("won by " + f.ID)
				return
			}
		}
	}
}

// AfterSteps implements room.AfterStepper: a snapshot every third step.
func (Duel) AfterSteps(r *room.Room[*Match, Input, *Fighter]) {
	if r.Step()%snapshotEvery == 0 {
		r.Broadcast(r.Sim().snapshot(r.Step()))
	}
}

// State is the snapshot packet.
type State struct {
	Type    string    `json:"type"` // "state"
	Step    uint64    `json:"step"`
	Players []Fighter `json:"players"`
	OrbX    float64   `json:"orbX"`
	OrbY    float64   `json:"orbY"`
	Winner  string    `json:"winner,omitempty"`
}

func (m *Match) snapshot(step uint64) State {
	s := State{Type: "state", Step: step, OrbX: m.orbX, OrbY: m.orbY, Winner: m.winner}
	for _, f := range m.players {
		s.Players = append(s.Players, *f)
	}
	return s
}

// ServerDraining implements room.DrainNotifier.
func (Duel) ServerDraining() room.Packet {
	return map[string]string{"type": "server_draining"}
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }
