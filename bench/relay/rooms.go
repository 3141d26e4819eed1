package main

import (
	"context"
	"log/slog"

	"github.com/muster-gg/muster/room"
)

// counter is the cheapest real game: a counter per room, stepped at 60 Hz.
type counter struct{}

type count struct{ n uint64 }

func (counter) NewSim(room.Info) *count                                 { return &count{} }
func (counter) Join(*room.Room[*count, int, struct{}], string) struct{} { return struct{}{} }
func (counter) Leave(*room.Room[*count, int, struct{}], struct{})       {}
func (counter) Input(r *room.Room[*count, int, struct{}], _ struct{}, in int) {
	r.Sim().n += uint64(in)
}
func (counter) FixedStep(r *room.Room[*count, int, struct{}]) { r.Sim().n++ }

// runRooms runs n rooms of the counter game until stop is called.
func runRooms(n int) (h *room.Host[*count, int, struct{}], stop func(), err error) {
	h, err = room.New[*count, int, struct{}](counter{}, room.Config{Rate: 60}, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.Run(ctx)
	}()
	for range n {
		if _, err := h.OpenRoom(ctx, room.Info{}); err != nil {
			cancel()
			<-done
			return nil, nil, err
		}
	}
	return h, func() { cancel(); <-done }, nil
}
