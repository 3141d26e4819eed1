package matchmaking

import (
	"context"
	"testing"
	"time"

	"github.com/muster-gg/muster/room"
)

// A queue handoff comes from another server through the backplane: any
// bytes are dropped or taken as a sane queue place, never a panic.
func FuzzArrive(f *testing.F) {
	f.Add([]byte(`{"playlist":"duel","waited_ns":4200000000,"rating":1500,"from":"s1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := New(Config{}, Playlist{Name: "duel", Rating: RatingRule{Window: 10, Widen: 10}})
		if err != nil {
			t.Fatal(err)
		}
		m.kit.Env, m.kit.Logger = nopEnv{}, quiet
		now := time.Unix(1_000_000, 0)
		m.arrive("p1", room.Handoff{Kind: HandoffKind, Data: data}, now, now)
		m.arrive("p2", room.Handoff{Kind: HandoffKind, Data: data}, now, now)
		if w, ok := m.Waited("p1"); ok && (w < 0 || w > maxWaited+time.Since(now)) {
			t.Fatalf("waited %v", w)
		}
		if n := m.Waiting("duel"); n != 0 && n != 2 {
			t.Fatalf("%d waiting, want both or none", n)
		}
		m.step(context.Background(), now.Add(time.Hour))
	})
}
