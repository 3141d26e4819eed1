// Package benchgame is the cheapest real game, a counter per room, whose
// rooms the benchmark programs under bench/ run.
package benchgame

import (
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/muster-gg/muster/room"
)

// Counter is the game: each room counts its steps and the inputs it got.
type Counter struct{}

// Count is a room's state.
type Count struct{ N uint64 }

// Room is a room of the Counter game.
type Room = room.Room[*Count, int, struct{}]

// Host hosts rooms of the Counter game.
type Host = room.Host[*Count, int, struct{}]

// NewSim starts a room at zero.
func (Counter) NewSim(room.Info) *Count { return &Count{} }

// Join seats a player; players have no state.
func (Counter) Join(*Room, string) struct{} { return struct{}{} }

// Leave does nothing.
func (Counter) Leave(*Room, struct{}) {}

// Input adds in to the count.
func (Counter) Input(r *Room, _ struct{}, in int) { r.Sim().N += uint64(in) }

// FixedStep counts a step.
func (Counter) FixedStep(r *Room) { r.Sim().N++ }

// NewHost returns a host of Counter rooms stepped at rate Hz, which logs
// nothing and takes any number of connections from one address (a
// benchmark's players all come from 127.0.0.1).
func NewHost(rate int) (*Host, error) {
	return room.New[*Count, int, struct{}](Counter{}, room.Config{
		Rate:   rate,
		Limits: room.Limits{Connects: 1 << 30, Open: math.MaxInt},
	}, slog.New(slog.DiscardHandler))
}

// Start runs a host of NewHost(rate) with n rooms open. stop ends it and
// returns once its Run has.
func Start(rate, n int) (h *Host, stop func(), err error) {
	h, err = NewHost(rate)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.Run(ctx)
	}()
	stop = func() { cancel(); <-done }
	for range n {
		if _, err := h.OpenRoom(ctx, room.Info{}); err != nil {
			stop()
			return nil, nil, err
		}
	}
	return h, stop, nil
}

// Every calls fn every period until ctx ends or fn returns false: the
// pace of a benchmark's players and churners.
func Every(ctx context.Context, period time.Duration, fn func() bool) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !fn() {
			return
		}
	}
}
