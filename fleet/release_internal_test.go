package fleet

import (
	"testing"
	"time"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
)

// ReleaseLater never waits for the fleet's lock, which the heartbeat holds
// for milliseconds while it goes over many thousands of claims: a room's
// step worker calls it, and every room behind that worker would wait too.
func TestReleaseLaterDoesNotWaitForTheFleetsLock(t *testing.T) {
	f, err := New(Config{NodeID: "s0"}, memory.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	f.held[backplane.Key{Kind: KindPlayer, ID: "p1"}] = true

	f.mu.Lock() // as the heartbeat does
	locked := true
	defer func() {
		if locked {
			f.mu.Unlock()
		}
	}()
	done := make(chan struct{})
	go func() {
		f.ReleaseLater(KindPlayer, "p1")
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // a bound on a hung test, not a measurement
		t.Fatal("ReleaseLater waited for the fleet's lock")
	}
	f.mu.Unlock()
	locked = false

	if f.Holds(KindPlayer, "p1") {
		t.Error("the claim is still held after ReleaseLater")
	}
	if n := f.Pending(); n != 1 {
		t.Errorf("%d releases pending, want 1", n)
	}
}
