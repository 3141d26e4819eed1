package fleet_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
)

// TestCheckpointTakenOnce: a server's checkpoint is taken by exactly one
// of the servers racing for it, and not at all once dropped or expired;
// its index is read by any server and removed.
func TestCheckpointTakenOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fleettest.Start(t, 3, nil)
		a := c.Servers[0]
		if err := a.PutCheckpoint(t.Context(), "m", []byte("state"), time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := a.PutCheckpointIndex(t.Context(), []string{"m", "n"}); err != nil {
			t.Fatal(err)
		}
		ix, err := c.Servers[1].CheckpointIndexOf(t.Context(), a.ID())
		if err != nil || !slices.Equal(ix.IDs, []string{"m", "n"}) || ix.At == 0 {
			t.Fatalf("index %+v, %v", ix, err)
		}

		var (
			wg  sync.WaitGroup
			mu  sync.Mutex
			got [][]byte
		)
		for _, s := range c.Servers[1:] {
			wg.Go(func() {
				data, err := s.TakeCheckpoint(t.Context(), a.ID(), "m")
				if err != nil && !errors.Is(err, fleet.ErrNotFound) {
					t.Error(err)
				}
				if data != nil {
					mu.Lock()
					got = append(got, data)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(got) != 1 || string(got[0]) != "state" {
			t.Errorf("takes got %q, want the checkpoint once", got)
		}

		if err := a.PutCheckpoint(t.Context(), "n", []byte("n"), time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := a.DropCheckpoint(t.Context(), "n"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Servers[1].TakeCheckpoint(t.Context(), a.ID(), "n"); !errors.Is(err, fleet.ErrNotFound) {
			t.Errorf("take of a dropped checkpoint: %v, want ErrNotFound", err)
		}
		if err := a.PutCheckpoint(t.Context(), "o", []byte("o"), time.Second); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		if _, err := c.Servers[1].TakeCheckpoint(t.Context(), a.ID(), "o"); !errors.Is(err, fleet.ErrNotFound) {
			t.Errorf("take of an expired checkpoint: %v, want ErrNotFound", err)
		}

		if err := c.Servers[1].DeleteCheckpointIndexOf(t.Context(), a.ID()); err != nil {
			t.Fatal(err)
		}
		if _, err := a.CheckpointIndexOf(t.Context(), a.ID()); !errors.Is(err, fleet.ErrNotFound) {
			t.Errorf("index after its removal: %v, want ErrNotFound", err)
		}
		if err := a.PutCheckpointIndex(t.Context(), []string{"m"}); err != nil {
			t.Fatal(err)
		}
		if err := a.PutCheckpointIndex(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := a.CheckpointIndexOf(t.Context(), a.ID()); !errors.Is(err, fleet.ErrNotFound) {
			t.Errorf("index after PutCheckpointIndex(nil): %v, want ErrNotFound", err)
		}
	})
}
