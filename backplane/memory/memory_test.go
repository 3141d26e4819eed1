package memory_test

import (
	"testing"
	"time"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/backplanetest"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/internal/testrun"
)

func TestConformance(t *testing.T) {
	backplanetest.Run(t, func(t *testing.T) backplanetest.Harness {
		clk := testrun.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
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
