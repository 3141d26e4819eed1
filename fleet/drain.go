package fleet

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
)

// Drainer is a part of the server with work to hand over before the server
// leaves the fleet: queues and lobbies move to other servers, rooms run to
// their end.
type Drainer interface {
	// Drain moves or finishes the part's work and returns when none is
	// left. Its context ends at the drain timeout; Drain then tells what
	// remains (the game's ServerDraining packet), ends it after a short
	// grace, and returns.
	Drain(ctx context.Context) error
}

// LastDrainer is a Drainer with a last part, run once every Drainer's
// Drain has returned (at the drain timeout too) and before the server
// leaves the fleet, while it still sees the others: the room host sends the
// players still connected, whom no part moved (their rooms ended), to
// another server instead of cutting them when the server stops.
type LastDrainer interface {
	Drainer
	// DrainLast does the last part; ctx ends after the fleet's call
	// timeout.
	DrainLast(ctx context.Context)
}

// DrainerFunc adapts a function to a Drainer.
type DrainerFunc func(ctx context.Context) error

// Drain calls fn(ctx).
func (fn DrainerFunc) Drain(ctx context.Context) error { return fn(ctx) }

type drainRun struct {
	done chan struct{}
	err  error
}

// AddDrainer adds d to the parts that Drain waits for. Add drainers before
// the server can drain.
func (f *Fleet) AddDrainer(d Drainer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drainers = append(f.drainers, d)
}

// Draining reports whether the server has begun to drain (or is leaving).
func (f *Fleet) Draining() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.draining || f.leaving
}

// Drain drains the server: its state becomes draining (the readiness probe
// fails and the others see it at once), every Drainer hands over or
// finishes its work, bounded by the drain timeout, and then the server
// leaves the fleet and Run returns. Drain returns when all of that is done.
// A second call waits for the first drain. Ending ctx cuts the drain short
// as the timeout would.
func (f *Fleet) Drain(ctx context.Context) error {
	f.mu.Lock()
	if d := f.drain; d != nil {
		f.mu.Unlock()
		select {
		case <-d.done:
			return d.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	d := &drainRun{done: make(chan struct{})}
	f.drain, f.draining = d, true
	drainers := slices.Clone(f.drainers)
	f.mu.Unlock()
	f.heartbeatNow()
	f.logger.Info("draining", "timeout", f.cfg.DrainTimeout, "parts", len(drainers))

	dctx, cancel := context.WithTimeout(ctx, f.cfg.DrainTimeout)
	errs := make([]error, len(drainers))
	var wg sync.WaitGroup
	for i, dr := range drainers {
		wg.Go(func() { errs[i] = dr.Drain(dctx) })
	}
	wg.Wait()
	timedOut := dctx.Err() != nil
	cancel()
	if timedOut {
		f.logger.Warn("drain timeout reached; remaining work was ended")
	}
	for _, dr := range drainers {
		if last, ok := dr.(LastDrainer); ok {
			lctx, lcancel := context.WithTimeout(context.WithoutCancel(ctx), f.cfg.CallTimeout)
			last.DrainLast(lctx)
			lcancel()
		}
	}

	lctx, lcancel := context.WithTimeout(context.WithoutCancel(ctx), f.cfg.CallTimeout)
	defer lcancel()
	d.err = errors.Join(append(errs, f.leave(lctx))...)
	close(d.done)
	return d.err
}

// DrainOnSignal waits for one of sigs (SIGTERM and SIGINT when none are
// given), then drains the server and returns the drain's error. A second
// signal during the drain cuts it short, as the drain timeout would (the
// second Ctrl-C of an impatient operator). It returns nil at once when ctx
// ends first.
func (f *Fleet) DrainOnSignal(ctx context.Context, sigs ...os.Signal) error {
	if len(sigs) == 0 {
		sigs = []os.Signal{syscall.SIGTERM, os.Interrupt}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	defer signal.Stop(ch)
	select {
	case <-ctx.Done():
		return nil
	case <-f.left:
		return nil
	case sig := <-ch:
		f.logger.Info("signal received; draining (a second signal cuts the drain short)", "signal", sig.String())
		dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		stop := make(chan struct{})
		var watcher sync.WaitGroup
		watcher.Go(func() {
			select {
			case sig := <-ch:
				f.logger.Warn("second signal; cutting the drain short", "signal", sig.String())
				cancel()
			case <-stop:
			}
		})
		defer watcher.Wait()
		defer close(stop)
		return f.Drain(dctx)
	}
}

// goDrain starts a drain on a goroutine that Run waits for, unless Run has
// ended or the server has left: then it reports false.
func (f *Fleet) goDrain() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.left:
		return false
	default:
	}
	if f.ended {
		return false
	}
	f.wg.Add(1) // under f.mu: Run sets ended under it before it waits
	go func() {
		defer f.wg.Done()
		f.Drain(context.Background())
	}()
	return true
}
