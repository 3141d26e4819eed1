package memory_test

import (
	"testing"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/backplanetest"
	"github.com/muster-gg/muster/backplane/memory"
)

func BenchmarkMemory(b *testing.B) {
	store := memory.NewStore(memory.Config{})
	backplanetest.Benchmark(b, func(b *testing.B, cluster string) backplane.Backplane {
		bp, err := store.Cluster(cluster)
		if err != nil {
			b.Fatal(err)
		}
		return bp
	}, nil)
}
