package federation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/federation"
)

// Example runs a home and one regional node on loopback: an admin creates
// and approves the node, the node's agent joins and announces, and the
// node appears in GET /api/v1/regions, where a placer finds it.
func Example() {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)

	// Home: the register (memory here, Redis in production) and its doors.
	home, err := federation.NewHome(federation.HomeConfig{
		Services: map[string]string{federation.ServiceGame: "wss://home.example/play"},
	}, memory.New(), quiet)
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(home.Handler())
	defer srv.Close()

	// An admin creates the Sydney node (its key is shown once) and, after
	// a look, approves it.
	_, nodeKey, err := home.CreateNode(ctx, federation.NodeSpec{ID: "au-sydney", Name: "Sydney", Country: "AU", Region: "Oceania"})
	if err != nil {
		panic(err)
	}
	if err := home.Approve(ctx, "au-sydney"); err != nil {
		panic(err)
	}

	// The node's operator runs the agent beside the game server.
	dir, err := os.MkdirTemp("", "muster-node")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	announced := make(chan federation.Announcement, 1)
	node, err := federation.NewNode(federation.NodeConfig{
		HomeURL:  srv.URL,
		NodeKey:  nodeKey,
		KeyFile:  filepath.Join(dir, "server.key"),
		Services: map[string]string{federation.ServiceGame: "wss://syd.example/play"},
		OnAnnounce: func(a federation.Announcement) {
			select {
			case announced <- a:
			default:
			}
		},
	}, quiet)
	if err != nil {
		panic(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- node.Run(runCtx) }()
	a := <-announced
	fmt.Println("announced as a server of", a.NodeID, "approved:", a.Approved)

	// The public regions list.
	resp, err := http.Get(srv.URL + "/api/v1/regions")
	if err != nil {
		panic(err)
	}
	var list federation.RegionList
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
		panic(err)
	}
	for _, r := range list.Regions {
		fmt.Println("region:", r.Node, r.Country, r.Region, r.Services[federation.ServiceGame])
	}

	stop()
	if err := <-done; err != nil {
		panic(err)
	}
	// Output:
	// announced as a server of au-sydney approved: true
	// region: au-sydney AU Oceania [wss://syd.example/play]
}

// ExamplePlacer places rooms from a regions list it polls from home.
func ExamplePlacer() {
	ctx := context.Background()
	home, _ := federation.NewHome(federation.HomeConfig{}, memory.New(), slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(home.Handler())
	defer srv.Close()

	placer, err := federation.NewPlacer(federation.PlacerConfig{
		HomeURL:      srv.URL,
		HomeServices: map[string]string{federation.ServiceGame: "wss://home.example/play"},
	}, nil)
	if err != nil {
		panic(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- placer.Run(runCtx) }()

	// With no node in rotation, every room is at home; a room with
	// players stays where it is.
	fmt.Println(placer.Place(federation.RoomInfo{ID: "r1"}, "AU").Address)
	syd := federation.Placement{Node: "au-sydney", Address: "wss://syd.example/play"}
	fmt.Println(placer.Place(federation.RoomInfo{ID: "r2", Members: 2, Placement: syd}, "FR").Address)

	stop()
	<-done
	// Output:
	// wss://home.example/play
	// wss://syd.example/play
}

// ExampleTURNCredentials mints credentials for coturn's use-auth-secret.
func ExampleTURNCredentials() {
	user, pass := federation.TURNCredentials("s3cret", "alice", 0, time.Unix(1700003600, 0))
	fmt.Println(user, pass)
	// Output: 1700003600:alice YAFdW/YDZewZsR1QSgUk2IrfbRI=
}

// ExampleRoomReporter wires a node's Muster game server to home: the
// server admits players with home's tokens and reports every room's full
// state, through the agent that runs in the same process.
func ExampleRoomReporter() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	node, err := federation.NewNode(federation.NodeConfig{
		HomeURL:  "https://home.example.org",
		NodeKey:  os.Getenv("MUSTER_NODE_NODE_KEY"), // only for the first run
		KeyFile:  "/var/lib/muster-node/server-key",
		Services: map[string]string{federation.ServiceGame: "wss://au.example.org/play"},
	}, logger)
	if err != nil {
		fmt.Println(err)
		return
	}
	tokens, err := federation.NewTokenChecker(federation.TokenCheckerConfig{
		Secret: []byte(os.Getenv("MUSTER_FEDERATION_TOKEN_SECRET")), // home's token secret
		NodeID: "au-sydney",
	})
	if err != nil {
		fmt.Println(err) // no secret in this example's environment
		return
	}
	rooms := federation.NewRoomReporter(node, logger)
	// As a module too, tokens seats each holder in the room its token names.
	opts := []muster.Option{muster.WithTicketCheckers(tokens), muster.WithModules(tokens), muster.WithRoomWatchers(rooms)}
	_ = opts // muster.New(game, cfg, opts...); then tokens.UseCounter(server.Fleet())
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	go rooms.Run(ctx) // and node.Run(ctx), and the server's Run(ctx)
	// Output: federation: invalid config: token Secret must be at least 16 bytes
}
