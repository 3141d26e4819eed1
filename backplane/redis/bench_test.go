package redis_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/backplanetest"
	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// countHook counts round trips: each command or pipeline sent is one.
type countHook struct{ n atomic.Int64 }

func (h *countHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *countHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *countHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// BenchmarkRedisServer runs against a real redis-server and reports round
// trips per call beside ns/op.
func BenchmarkRedisServer(b *testing.B) {
	srv := testbin.StartRedis(b)
	rdb := goredis.NewClient(&goredis.Options{
		Addr: srv.Addr, ContextTimeoutEnabled: true, DisableIdentity: true,
		ReadTimeout: 5 * time.Second, DialTimeout: time.Second,
	})
	defer rdb.Close()
	hook := &countHook{}
	rdb.AddHook(hook)
	backplanetest.Benchmark(b, func(b *testing.B, cluster string) backplane.Backplane {
		bp, err := redis.New(rdb, cluster)
		if err != nil {
			b.Fatal(err)
		}
		return bp
	}, hook.n.Load)
}
