// Command minimal is the smallest Muster game: queued in pairs, players race to ten taps.
package main

import (
	"context"
	"log"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/matchmaking"
	"github.com/muster-gg/muster/room"
)

type Race = room.Room[map[string]int, int, string] // taps by player; an input is a tap

type TapRace struct{}

func (TapRace) NewSim(room.Info) map[string]int { return map[string]int{} }
func (TapRace) Join(r *Race, id string) string  { return id }
func (TapRace) Leave(r *Race, id string)        {}
func (TapRace) AfterSteps(r *Race)              { r.Broadcast(map[string]any{"type": "state", "taps": r.Sim()}) }
func (TapRace) FixedStep(r *Race)               {}
func (TapRace) Input(r *Race, id string, tap int) {
	if r.Sim()[id]++; r.Sim()[id] == 10 && !r.Ended() {
		r.Broadcast(map[string]any{"type": "winner", "player": id})
		r.End("won")
	}
}

func main() {
	cfg, err := muster.LoadConfig() // ./config.yml if present, then MUSTER__… variables
	if err == nil {
		err = muster.Serve(context.Background(), TapRace{}, cfg,
			muster.WithPlaylists(matchmaking.Playlist{Name: "race"}), muster.WithGuestTickets("/ticket"))
	}
	if err != nil {
		log.Fatal(err)
	}
}
