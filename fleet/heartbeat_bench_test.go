package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
)

// timedBeat is a backplane that notes when its Heartbeat returns and when
// its Reassert is called and returns: what a heartbeat does between them,
// and after the Reassert, is its work on the claims, the part done under
// the fleet's lock.
type timedBeat struct {
	*memory.Backplane
	beatDone, reassertCalled, reassertDone time.Time
}

func (b *timedBeat) Heartbeat(ctx context.Context, n backplane.Node, ttl time.Duration) ([]backplane.Node, bool, error) {
	nodes, created, err := b.Backplane.Heartbeat(ctx, n, ttl)
	b.beatDone = time.Now()
	return nodes, created, err
}

func (b *timedBeat) Reassert(ctx context.Context, owner string, lease time.Duration, keys ...backplane.Key) ([]backplane.Key, error) {
	b.reassertCalled = time.Now()
	lost, err := b.Backplane.Reassert(ctx, owner, lease, keys...)
	b.reassertDone = time.Now()
	return lost, err
}

// BenchmarkHeartbeatClaimWork is one heartbeat of a server holding 20,000
// claims, two of which changed since the last (a player joined, another
// left). claim-ns/beat is the heartbeat's own work on the claims, around
// the backplane calls: the time that Claim, Holds and Release may wait for
// the fleet's lock.
func BenchmarkHeartbeatClaimWork(b *testing.B) {
	bp := &timedBeat{Backplane: memory.New()}
	f, ids := holding(b, bp, 20000)
	ctx := b.Context()
	var work time.Duration
	b.ResetTimer()
	for i := range b.N {
		if err := f.Release(ctx, KindPlayer, ids[i%len(ids)]); err != nil {
			b.Fatal(err)
		}
		if err := f.Claim(ctx, KindPlayer, fmt.Sprintf("n%d", i)); err != nil {
			b.Fatal(err)
		}
		if err := f.step(ctx); err != nil {
			b.Fatal(err)
		}
		done := time.Now()
		work += bp.reassertCalled.Sub(bp.beatDone) + done.Sub(bp.reassertDone)
	}
	b.ReportMetric(float64(work.Nanoseconds())/float64(b.N), "claim-ns/beat")
}
