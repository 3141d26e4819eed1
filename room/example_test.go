package room_test

import (
	"context"
	"fmt"

	"github.com/muster-gg/muster/room"
)

// A tiny game: each room counts its steps and ends after three.
type countdown struct{ ended chan string }

type tally struct{ steps int }

func (countdown) NewSim(room.Info) *tally { return &tally{} }
func (countdown) Join(*room.Room[*tally, int, string], string) string {
	return "" // this game keeps nothing per player
}
func (countdown) Leave(*room.Room[*tally, int, string], string)      {}
func (countdown) Input(*room.Room[*tally, int, string], string, int) {}
func (g countdown) FixedStep(r *room.Room[*tally, int, string]) {
	r.Sim().steps++
	if r.Sim().steps == 3 {
		r.End("three steps")
		g.ended <- fmt.Sprintf("room %s ended after %d steps, players %v", r.ID(), r.Sim().steps, r.Players())
	}
}

func Example() {
	game := countdown{ended: make(chan string, 1)}
	host, err := room.New[*tally, int, string](game, room.Config{Rate: 60}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- host.Run(ctx) }()

	// Serve host.Handler() on an http.Server for players to connect.
	if _, err := host.OpenRoom(ctx, room.Info{ID: "r1", Players: []string{"alice"}}); err != nil {
		fmt.Println(err)
	}
	fmt.Println(<-game.ended)

	cancel()
	fmt.Println("run:", <-done)
	// Output:
	// room r1 ended after 3 steps, players [alice]
	// run: <nil>
}
