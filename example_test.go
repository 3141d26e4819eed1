package muster_test

import (
	"context"
	"encoding/json"
	"errors"
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
		done <- muster.Serve(ctx, Counter{}, muster.DefaultConfig(),
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

// A game with accounts: players sign in at POST /login, and the server
// answers with a ticket for the account's player id. Here a header stands
// for the game's own check of a session.
func ExampleWithSignIn() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	signIn := func(r *http.Request) (string, error) {
		if r.Header.Get("Authorization") != "Bearer session-of-ada" { // the game's own session check
			return "", errors.New("not signed in")
		}
		return "ada", nil
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- muster.Serve(ctx, Counter{}, muster.DefaultConfig(),
			muster.WithSignIn("/login", signIn),
			muster.WithListener(l),
			muster.WithLogger(slog.New(slog.DiscardHandler)))
	}()

	for _, auth := range []string{"Bearer session-of-ada", "Bearer forged"} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+l.Addr().String()+"/login", nil)
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		var body struct{ Player string }
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		fmt.Printf("%s: %q\n", resp.Status, body.Player)
	}
	stop()
	fmt.Println("stopped:", <-done)
	// Output:
	// 200 OK: "ada"
	// 401 Unauthorized: ""
	// stopped: <nil>
}

// A configuration read as LoadConfig reads one, from file content and the
// environment: the defaults, the file over them, the environment over the
// file, and CheckConfig.
func ExampleDefaultConfig() {
	file := []byte(`
muster:
  server:
    drain:
      timeout: 360
    fleet:
      internal-address: "{ip}:8000"
      public-address: "wss://{node-id}.example.com"
  security:
    key: 0123456789abcdef0123
`)
	// A server started from its directory: muster.LoadConfig().
	cfg, err := config.Parse(file, []string{
		"MUSTER__SERVER__FLEET__REDIS=redis:6379",
		"MUSTER__SERVER__CAPACITY__MAX_LOAD=300",
	}, muster.DefaultConfig(), muster.CheckConfig)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Server.Fleet.Redis, cfg.Server.Capacity.MaxLoad, cfg.Server.Drain.Timeout)
	fmt.Println(cfg.InternalAddress("10.0.0.7"), cfg.PublicAddress("eu-1"), cfg.Secret())
	// Output:
	// redis:6379 300 6m0s
	// 10.0.0.7:8000 wss://eu-1.example.com 0123456789abcdef0123
}
