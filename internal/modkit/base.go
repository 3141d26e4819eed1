package modkit

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/room"
)

// Base is the part of a built-in module that holds its host: keep it in a
// field, create it with NewBase, and call its Attach from the module's.
type Base struct {
	// Env is the host the module is attached to; nil until Attach. Tests
	// set their own.
	Env room.ModuleHost
	// Codec is the host's codec, set by Attach.
	Codec room.Codec
	// Logger is the host's logger with the module's name, set by Attach.
	Logger *slog.Logger
	// Manual makes Loop step nothing, for tests that step the module by
	// hand.
	Manual bool

	name        string
	notAttached error
	mu          sync.Mutex // guards Env during Attach
	draining    atomic.Bool
}

// NewBase returns the Base of the module called name (for messages and
// logs); Loop returns notAttached when the module was never attached.
func NewBase(name string, notAttached error) Base {
	return Base{name: name, notAttached: notAttached}
}

// Attach is the module's room.Module Attach: Host.Use calls it.
func (b *Base) Attach(h room.ModuleHost) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Env != nil {
		return fmt.Errorf("%s: module attached twice", b.name)
	}
	b.Env, b.Codec, b.Logger = h, h.Codec(), h.Logger().With("module", b.name)
	return nil
}

// Loop is the body of a module's Run: it runs step every tick, and at once
// when kick fires (though no sooner than gap after the last step), until
// ctx ends; then it returns nil. A nil kick never fires. What step returns
// (the drain loop's count) is not used here.
func (b *Base) Loop(ctx context.Context, tick, gap time.Duration, kick <-chan struct{}, step func(context.Context, time.Time) int) error {
	b.mu.Lock()
	attached := b.Env != nil
	b.mu.Unlock()
	if !attached {
		return b.notAttached
	}
	if b.Manual {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-kick:
			if wait := gap - time.Since(last); wait > 0 {
				w := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					w.Stop()
					return nil
				case <-w.C:
				}
			}
		}
		last = time.Now()
		step(ctx, last)
	}
}

// Drain is the body of the module's fleet.Drainer: from now on Draining
// reports true, and DrainLoop runs step every tick until nothing is left
// here or ctx ends (then tellRest tells whoever is left).
func (b *Base) Drain(ctx context.Context, tick time.Duration, step func(context.Context, time.Time) int, tellRest func()) error {
	b.draining.Store(true)
	DrainLoop(ctx, tick, step, tellRest)
	return nil
}

// Draining reports whether Drain has started (or SetDraining set it).
func (b *Base) Draining() bool { return b.draining.Load() }

// SetDraining sets what Draining reports, for tests.
func (b *Base) SetDraining(v bool) { b.draining.Store(v) }

// View returns this server's id and the live servers of the fleet as it
// sees them; "" and none without a fleet.
func (b *Base) View() (self string, nodes []fleet.Node) {
	if f := b.Env.Fleet(); f != nil {
		return f.ID(), f.Nodes()
	}
	return "", nil
}

// Self returns the id of the server in the fleet, or "" without a fleet.
func (b *Base) Self() string {
	if f := b.Env.Fleet(); f != nil {
		return f.ID()
	}
	return ""
}

// Moment is what a module's step sees as it begins: the time, this
// server and the fleet as it sees them, and the host's move cooldown.
type Moment struct {
	Now    time.Time
	Self   string       // this server's id, "" without a fleet
	Nodes  []fleet.Node // the live servers, as this one sees them
	Cooled Cooldown     // the move cooldown at Now
}

// Moment returns the moment at now.
func (b *Base) Moment(now time.Time) Moment {
	self, nodes := b.View()
	return Moment{Now: now, Self: self, Nodes: nodes, Cooled: b.Cooldown(now)}
}
