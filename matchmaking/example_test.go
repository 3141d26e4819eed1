package matchmaking_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/matchmaking"
	"github.com/muster-gg/muster/room"
)

// One server: a duel playlist and a ranked one whose rating window widens
// by 25 points per second waited. Two players connect, queue for duel and
// are matched into a room of kind "duel".
func Example() {
	host, err := room.New[*hosttest.Sim, int, string](&hosttest.Game{}, room.Config{}, quiet)
	if err != nil {
		fmt.Println(err)
		return
	}
	mm, err := matchmaking.New(matchmaking.Config{},
		matchmaking.Playlist{Name: "duel"},
		matchmaking.Playlist{Name: "ranked", Teams: 2, TeamSize: 2,
			Rating: matchmaking.RatingRule{Window: 50, Widen: 25, Max: 400, Default: 1500}},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := host.Use(mm); err != nil {
		fmt.Println(err)
		return
	}

	// The module's rounds run beside the host.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { host.Run(ctx) })
	wg.Go(func() { mm.Run(ctx) })
	srv := httptest.NewServer(host.Handler())
	defer func() {
		srv.Close()
		cancel()
		wg.Wait()
	}()

	rooms := make(chan string, 2)
	for _, name := range []string{"alice", "bob"} {
		tk, _ := host.Tickets().Issue(name)
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"?ticket="+tk, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer c.CloseNow()
		c.Write(ctx, websocket.MessageText, []byte(`{"type":"hello","data":{"mode":"new"}}`))
		c.Write(ctx, websocket.MessageText, []byte(`{"type":"queue","data":{"playlist":"duel"}}`))
		wg.Go(func() {
			for {
				_, data, err := c.Read(ctx)
				if err != nil {
					return
				}
				var p struct{ Type, Kind string }
				json.Unmarshal(data, &p)
				if p.Type == "room" {
					rooms <- name + " plays " + p.Kind
					return
				}
			}
		})
	}
	got := []string{<-rooms, <-rooms}
	if got[0] > got[1] {
		got[0], got[1] = got[1], got[0]
	}
	fmt.Println(got[0])
	fmt.Println(got[1])
	// Output:
	// alice plays duel
	// bob plays duel
}

// Every server ranks the servers with room the same way: the first
// gathers the playlist, the next takes over when it fills.
func ExampleGatherOrder() {
	nodes := []fleet.Node{
		{ID: "game-a", State: fleet.StateReady, MaxLoad: 200},
		{ID: "game-b", State: fleet.StateReady, MaxLoad: 200},
		{ID: "game-c", State: fleet.StateReady, MaxLoad: 200},
	}
	order := func() (ids []string) {
		for _, n := range matchmaking.GatherOrder(matchmaking.Playlist{Name: "duel"}, nodes) {
			ids = append(ids, n.ID)
		}
		return ids
	}
	fmt.Println(order())
	first := order()[0]
	for i := range nodes {
		if nodes[i].ID == first {
			nodes[i].Load = 200 // it fills
		}
	}
	fmt.Println(order())
	// Output:
	// [game-c game-b game-a]
	// [game-b game-a]
}
