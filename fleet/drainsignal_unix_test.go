//go:build unix

package fleet_test

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// A second signal during DrainOnSignal cuts the drain short.
func TestSecondSignalCutsDrain(t *testing.T) {
	c := fleettest.Start(t, 1, func(_ int, cfg *fleet.Config) { cfg.DrainTimeout = time.Hour })
	s := c.Servers[0]
	started := make(chan struct{})
	s.AddDrainer(fleet.DrainerFunc(func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		return nil
	}))
	done := make(chan error, 1)
	go func() { done <- s.DrainOnSignal(t.Context(), syscall.SIGUSR1) }()
	p, _ := os.FindProcess(os.Getpid())
	// Until DrainOnSignal listens, the signal would kill the test: send
	// it until the drain starts.
	testrun.WaitFor(t, "drain started by the first signal", func() bool {
		select {
		case <-started:
			return true
		default:
			p.Signal(syscall.SIGUSR1)
			return false
		}
	})
	p.Signal(syscall.SIGUSR1)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second signal did not cut the drain short")
	}
}
