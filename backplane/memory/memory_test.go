package memory_test

import (
	"sync"
	"testing"
	"time"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/backplanetest"
	"github.com/muster-gg/muster/backplane/memory"
)

// clock is a manual clock for the store.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestConformance(t *testing.T) {
	backplanetest.Run(t, func(t *testing.T) backplanetest.Harness {
		clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		store := memory.NewStore(memory.Config{Now: clk.Now})
		var opened []backplane.Backplane
		return backplanetest.Harness{
			Open: func(t *testing.T, cluster string) backplane.Backplane {
				b, err := store.Cluster(cluster)
				if err != nil {
					t.Fatal(err)
				}
				opened = append(opened, b)
				return b
			},
			Advance: func(_ *testing.T, d time.Duration) { clk.Advance(d) },
			Stop: func(*testing.T) {
				for _, b := range opened {
					b.Close()
				}
			},
		}
	})
}
