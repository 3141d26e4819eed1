package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/benchgame"
	"github.com/muster-gg/muster/room"
)

// slowBackplane delays the calls that reach the store (Heartbeat, Claim,
// Release, Leave) by delay once on is set: a Redis that answers, slowly.
// Its Backplane is memory's, wrapped with wait as the Before hook.
type slowBackplane struct {
	backplane.Backplane
	delay time.Duration
	on    atomic.Bool
}

func newSlowBackplane(delay time.Duration) *slowBackplane {
	b := &slowBackplane{delay: delay}
	b.Backplane = backplane.Wrap(memory.New(), backplane.Hooks{Before: b.wait})
	return b
}

// wait is the Before hook: a call of op waits delay while on is set.
func (b *slowBackplane) wait(ctx context.Context, op backplane.Op) error {
	switch op {
	case backplane.OpHeartbeat, backplane.OpClaim, backplane.OpRelease, backplane.OpLeave:
	default:
		return nil
	}
	if !b.on.Load() {
		return nil
	}
	t := time.NewTimer(b.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runChurn runs k rooms of two players on a host bound to a fleet whose
// backplane answers every call delay late, while churners end rooms,
// unseat players and open new rooms (their claims wait for the
// backplane on the churners' goroutines). It returns the host's p99
// lateness, which counts steps owed by a stalled worker, the rooms
// ended and players unseated while measuring, and how much of the
// machine's CPU time the hypervisor took meanwhile ("" when unknown).
func runChurn(k int, delay, measure time.Duration, churners int) (p99 time.Duration, ended, left int64, steal string) {
	bp := newSlowBackplane(delay)
	logger := slog.New(slog.DiscardHandler)
	fl, err := fleet.New(fleet.Config{NodeID: "bench", Heartbeat: time.Second, CallTimeout: 500 * time.Millisecond}, bp, logger)
	if err != nil {
		panic(err)
	}
	h := newHost()
	h.UseFleet(fl)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { fl.Run(ctx) })
	wg.Go(func() { h.Run(ctx) })
	var next atomic.Int64
	open := func(ctx context.Context) (string, error) {
		n := next.Add(1)
		id := fmt.Sprintf("r%d", n)
		_, err := h.OpenRoom(ctx, room.Info{ID: id, Players: []string{id + "a", id + "b"}})
		return id, err
	}
	for range k {
		if _, err := open(ctx); err != nil {
			panic(err)
		}
	}
	bp.on.Store(true)
	var nEnded, nLeft atomic.Int64
	var measuring atomic.Bool
	cctx, stopChurn := context.WithCancel(ctx)
	var churn sync.WaitGroup
	for range churners {
		churn.Go(func() {
			benchgame.Every(cctx, 50*time.Millisecond, func() bool {
				// End a room, unseat a player of another, open one.
				last := next.Load()
				id := fmt.Sprintf("r%d", 1+rand.Int64N(last))
				if r, ok := h.Room(id); ok {
					r.End("bench")
					if measuring.Load() {
						nEnded.Add(1)
					}
				}
				id = fmt.Sprintf("r%d", 1+rand.Int64N(last))
				if h.RoomOf(id+"a") != "" {
					h.Unseat(id + "a")
					if measuring.Load() {
						nLeft.Add(1)
					}
				}
				if h.Rooms() < k {
					// The claim waits for the backplane on this goroutine,
					// not on a worker; the churn keeps its pace meanwhile.
					churn.Go(func() { open(cctx) })
				}
				return true
			})
		})
	}
	time.Sleep(time.Second)
	h.ResetLateness()
	measuring.Store(true)
	sm := startSteal()
	time.Sleep(measure)
	p99, _ = h.Lateness(0.99)
	steal = sm.done()
	measuring.Store(false)
	stopChurn()
	churn.Wait()
	bp.on.Store(false)
	cancel()
	wg.Wait()
	runtime.GC()
	return p99, nEnded.Load(), nLeft.Load(), steal
}
