//go:build unix

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/matchmaking"
	"github.com/muster-gg/muster/room"
)

// The game the benchmark plays, on Muster: rooms of two from the "duel"
// playlist; an input stores the player's position; after every step (20 a
// second) the room broadcasts both positions and the tick. The same game
// on Colyseus is colyseus/server.js.
type game struct{}

type match struct{ players []*fighter }

type fighter struct {
	X uint32 `json:"x"`
	Y uint32 `json:"y"`
}

type input struct {
	X uint32 `json:"x"`
	Y uint32 `json:"y"`
}

type state struct {
	Type    string    `json:"type"` // "state"
	Tick    uint64    `json:"tick"`
	Players []fighter `json:"players"`
}

type duel = room.Room[*match, input, *fighter]

func (game) NewSim(room.Info) *match { return &match{} }

func (game) Join(r *duel, id string) *fighter {
	f := &fighter{}
	r.Sim().players = append(r.Sim().players, f)
	return f
}

func (game) Leave(r *duel, f *fighter) {
	m := r.Sim()
	for i, p := range m.players {
		if p == f {
			m.players = append(m.players[:i], m.players[i+1:]...)
			break
		}
	}
}

func (game) Input(_ *duel, f *fighter, in input) { f.X, f.Y = in.X, in.Y }

func (game) FixedStep(*duel) {}

func (game) AfterSteps(r *duel) {
	m := r.Sim()
	s := state{Type: "state", Tick: r.Step(), Players: make([]fighter, len(m.players))}
	for i, f := range m.players {
		s.Players[i] = *f
	}
	r.Broadcast(s)
}

// serveMuster runs the game with muster.Serve on host:port until
// SIGTERM, with binaryCodec when binaryStates is set. With profile set, SIGUSR1 starts a CPU profile into it and the
// next SIGUSR1 ends it: the load generator marks its measuring window so.
func serveMuster(host string, port int, profile string, binaryStates bool) error {
	env := append(os.Environ(),
		"MUSTER__SERVER__HTTP__HOST="+host,
		fmt.Sprintf("MUSTER__SERVER__HTTP__PORT=%d", port),
		"MUSTER__SERVER__CAPACITY__MAX_LOAD=1000000",
		"MUSTER__SERVER__DRAIN__TIMEOUT=1",
		"MUSTER__ROOM__RATE=20",
		"MUSTER__ROOM__LIMITS__CONNECTS=1000000",
		"MUSTER__ROOM__LIMITS__OPEN=0",
	)
	cfg, err := muster.LoadConfigFile("", env)
	if err != nil {
		return err
	}
	// The server's own log says nothing the benchmark needs, and its
	// drain at the end warns that the players' rooms were ended.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	if profile != "" {
		stop := profileOnSignal(profile)
		defer stop()
	}
	opts := []muster.Option{
		muster.WithPlaylists(matchmaking.Playlist{Name: "duel"}),
		muster.WithGuestTickets("/ticket"),
	}
	if binaryStates {
		opts = append(opts, muster.WithCodec(binaryCodec{}))
	}
	return muster.Serve(context.Background(), game{}, cfg, opts...)
}

// profileOnSignal toggles a CPU profile into path on each SIGUSR1. stop
// ends one still running.
func profileOnSignal(path string) (stop func()) {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGUSR1)
	done := make(chan struct{})
	ended := make(chan struct{})
	var f *os.File
	go func() {
		defer close(ended)
		for {
			select {
			case <-done:
				if f != nil {
					pprof.StopCPUProfile()
					f.Close()
				}
				return
			case <-sig:
				if f == nil {
					var err error
					if f, err = os.Create(path); err == nil {
						err = pprof.StartCPUProfile(f)
					}
					if err != nil {
						fmt.Fprintln(os.Stderr, "cpuprofile:", err)
						f = nil
					}
					continue
				}
				pprof.StopCPUProfile()
				f.Close()
				f = nil
				fmt.Fprintln(os.Stderr, "cpuprofile written to", path)
			}
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
		<-ended
	}
}
