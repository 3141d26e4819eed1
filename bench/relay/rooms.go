package main

import (
	"context"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/benchgame"
)

// runRooms runs n rooms of benchgame's counter at 60 Hz until stop is
// called.
func runRooms(n int) (h *benchgame.Host, stop func(), err error) {
	return benchgame.Start(60, n)
}

// players are connections straight to the relaying server, each sending a
// 32-byte message at 60 Hz, as a game's players do, and timing its echo.
type players struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	rts    []time.Duration // since the last take
}

// startPlayers connects n players to url; with n = 0 it returns players
// that never measure anything.
func startPlayers(url string, n int) (*players, error) {
	ctx, cancel := context.WithCancel(context.Background())
	pl := &players{cancel: cancel}
	for range n {
		c, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			pl.stop()
			return nil, err
		}
		pl.wg.Go(func() {
			defer c.CloseNow()
			msg := make([]byte, 32)
			benchgame.Every(ctx, time.Second/60, func() bool {
				t0 := time.Now()
				if err := c.Write(ctx, websocket.MessageBinary, msg); err != nil {
					return false
				}
				if _, _, err := c.Read(ctx); err != nil {
					return false
				}
				rt := time.Since(t0)
				pl.mu.Lock()
				pl.rts = append(pl.rts, rt)
				pl.mu.Unlock()
				return true
			})
		})
	}
	return pl, nil
}

// take returns the round trips measured since the last call.
func (pl *players) take() []time.Duration {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	rts := pl.rts
	pl.rts = nil
	return rts
}

// stop disconnects the players and waits for their goroutines.
func (pl *players) stop() {
	pl.cancel()
	pl.wg.Wait()
}
