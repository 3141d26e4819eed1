package backplanetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/muster-gg/muster/backplane"
)

// Benchmark measures each call of the backplane made by open. When
// roundTrips is not nil it must return the number of round trips to the
// store made so far, and each benchmark reports roundtrips/op.
func Benchmark(b *testing.B, open func(b *testing.B, cluster string) backplane.Backplane, roundTrips func() int64) {
	ctx := context.Background()
	run := func(name string, setup func(bp backplane.Backplane), op func(bp backplane.Backplane, i int) error) {
		b.Run(name, func(b *testing.B) {
			bp := open(b, fmt.Sprintf("bench-%s", name))
			if setup != nil {
				setup(bp)
			}
			var before int64
			if roundTrips != nil {
				before = roundTrips()
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := op(bp, i); err != nil {
					b.Fatal(err)
				}
				i++
			}
			if roundTrips != nil {
				b.ReportMetric(float64(roundTrips()-before)/float64(b.N), "roundtrips/op")
			}
		})
	}
	fleet := func(n int) func(bp backplane.Backplane) {
		return func(bp backplane.Backplane) {
			for i := range n {
				id := fmt.Sprintf("node-%03d", i)
				if _, _, err := bp.Heartbeat(ctx, backplane.Node{ID: id, Data: make([]byte, 256)}, time.Hour); err != nil {
					b.Fatal(err)
				}
				if err := bp.Claim(ctx, id, backplane.Key{Kind: "player", ID: id}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	record := make([]byte, 256)
	// Re-asserting a server's 100 claims: one Reassert, beside the 100
	// ClaimUnique calls the fleet made before it.
	held := make([]backplane.Key, 100)
	for i := range held {
		held[i] = backplane.Key{Kind: "player", ID: fmt.Sprintf("p%03d", i)}
	}
	run("Reassert100", fleet(10), func(bp backplane.Backplane, _ int) error {
		_, err := bp.Reassert(ctx, "node-000", time.Minute, held...)
		return err
	})
	run("ClaimUnique100", fleet(10), func(bp backplane.Backplane, _ int) error {
		for _, k := range held {
			if _, err := bp.ClaimUnique(ctx, "node-000", k); err != nil {
				return err
			}
		}
		return nil
	})
	run("Heartbeat10", fleet(10), func(bp backplane.Backplane, _ int) error {
		_, _, err := bp.Heartbeat(ctx, backplane.Node{ID: "node-000", Data: record}, time.Hour)
		return err
	})
	run("Nodes10", fleet(10), func(bp backplane.Backplane, _ int) error {
		_, err := bp.Nodes(ctx)
		return err
	})
	run("Locate", fleet(10), func(bp backplane.Backplane, _ int) error {
		_, err := bp.Locate(ctx, backplane.Key{Kind: "player", ID: "node-005"})
		return err
	})
	run("HandoffPutArrive", fleet(10), func(bp backplane.Backplane, i int) error {
		id := fmt.Sprint(i)
		if err := bp.PutHandoff(ctx, "node-001", id, record, time.Minute); err != nil {
			return err
		}
		_, taken, err := bp.Arrive(ctx, backplane.Key{Kind: "player", ID: "node-005"}, "node-001", id, time.Second)
		if err != nil {
			return err
		}
		return bp.ConfirmHandoff(ctx, "node-001", id, taken.Token)
	})
	run("Release2", fleet(1), func(bp backplane.Backplane, i int) error {
		return bp.Release(ctx, "node-000", backplane.Key{Kind: "player", ID: fmt.Sprint(i % 1024)}, backplane.Key{Kind: "player", ID: fmt.Sprint(i%1024 + 1024)})
	})
	run("Claim", fleet(1), func(bp backplane.Backplane, i int) error {
		return bp.Claim(ctx, "node-000", backplane.Key{Kind: "player", ID: fmt.Sprint(i % 1024)})
	})
	run("ClaimUnique", fleet(1), func(bp backplane.Backplane, i int) error {
		_, err := bp.ClaimUnique(ctx, "node-000", backplane.Key{Kind: "lobby", ID: fmt.Sprint(i % 1024)})
		return err
	})
	run("HandoffPutTake", nil, func(bp backplane.Backplane, i int) error {
		id := fmt.Sprint(i)
		if err := bp.PutHandoff(ctx, "node-001", id, record, time.Minute); err != nil {
			return err
		}
		taken, err := bp.TakeHandoff(ctx, "node-001", id, time.Second)
		if err != nil {
			return err
		}
		return bp.ConfirmHandoff(ctx, "node-001", id, taken.Token)
	})
	run("Increment", nil, func(bp backplane.Backplane, i int) error {
		_, err := bp.Increment(ctx, fmt.Sprint(i%1024), time.Minute, 1)
		return err
	})
}
