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
	"github.com/muster-gg/muster/room"
)

// slowBackplane delays every call by delay once on is set: a Redis that
// answers, slowly.
type slowBackplane struct {
	backplane.Backplane
	delay time.Duration
	on    atomic.Bool
}

func (b *slowBackplane) wait(ctx context.Context) error {
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

func (b *slowBackplane) Heartbeat(ctx context.Context, n backplane.Node, ttl time.Duration) ([]backplane.Node, bool, error) {
	if err := b.wait(ctx); err != nil {
		return nil, false, err
	}
	return b.Backplane.Heartbeat(ctx, n, ttl)
}

func (b *slowBackplane) Claim(ctx context.Context, owner string, keys ...backplane.Key) error {
	if err := b.wait(ctx); err != nil {
		return err
	}
	return b.Backplane.Claim(ctx, owner, keys...)
}

func (b *slowBackplane) Release(ctx context.Context, owner string, keys ...backplane.Key) error {
	if err := b.wait(ctx); err != nil {
		return err
	}
	return b.Backplane.Release(ctx, owner, keys...)
}

func (b *slowBackplane) Leave(ctx context.Context, id string) error {
	if err := b.wait(ctx); err != nil {
		return err
	}
	return b.Backplane.Leave(ctx, id)
}

// runChurn runs k rooms of two players on a host bound to a fleet whose
// backplane answers every call delay late, while churners end rooms,
// unseat players and open new rooms (their claims wait for the
// backplane on the churners' goroutines). It returns the host's p99
// lateness, which counts steps owed by a stalled worker, the rooms
// ended and players unseated while measuring, and how much of the
// machine's CPU time the hypervisor took meanwhile ("" when unknown).
func runChurn(k int, delay, measure time.Duration, churners int) (p99 time.Duration, ended, left int64, steal string) {
	bp := &slowBackplane{Backplane: memory.New(), delay: delay}
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
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-cctx.Done():
					return
				case <-t.C:
				}
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
			}
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
