package muster_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/matchmaking"
	"github.com/muster-gg/muster/room"
)

// Counter is a game whose rooms count their steps.
type Counter struct{}

func (Counter) NewSim(room.Info) *int                                  { return new(int) }
func (Counter) Join(r *room.Room[*int, int, string], id string) string { return id }
func (Counter) Leave(*room.Room[*int, int, string], string)            {}
func (Counter) Input(*room.Room[*int, int, string], string, int)       {}
func (Counter) FixedStep(r *room.Room[*int, int, string])              { *r.Sim()++ }

// A whole game server: matchmaking for pairs, guest tickets, the fleet
// (alone here, on the in-memory backplane), probes, metrics and drain.
func ExampleServe() {
	l, err := net.Listen("tcp", "127.0.0.1:0") // the example's own port; a server uses muster.server.http
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- muster.Serve(ctx, Counter{}, config.Default(),
			muster.WithPlaylists(matchmaking.Playlist{Name: "duel"}),
			muster.WithGuestTickets("/ticket"),
			muster.WithListener(l),
			muster.WithLogger(slog.New(slog.DiscardHandler)))
	}()

	resp, err := http.Post("http://"+l.Addr().String()+"/ticket", "application/json", nil)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("ticket:", resp.Status)

	stop() // as SIGTERM would, without the drain
	fmt.Println("stopped:", <-done)
	// Output:
	// ticket: 200 OK
	// stopped: <nil>
}
