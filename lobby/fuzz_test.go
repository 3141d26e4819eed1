package lobby

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/room"
)

// A lobby handoff comes from another server through the backplane: any
// bytes are dropped or taken as a consistent lobby, never a panic.
func FuzzArrive(f *testing.F) {
	f.Add([]byte(`{"code":"K7QXM","role":"host","host":"p1","members":["p1","p2"],"from":"s1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := New(Config{})
		if err != nil {
			t.Fatal(err)
		}
		m.kit.Env, m.kit.Logger = hosttest.NopEnv{}, quiet
		now := time.Unix(1_000_000, 0)
		ctx := context.Background()
		for _, id := range []string{"p1", "p2", "p3"} {
			m.arrive(ctx, id, room.Handoff{Kind: HandoffKind, Data: data}, now, now)
		}
		m.mu.Lock()
		for id, l := range m.players {
			if l.member(id) == nil || m.lobbies[l.code] != l {
				t.Fatalf("%s points to lobby %q it is not in", id, l.code)
			}
		}
		for _, l := range m.lobbies {
			if len(l.members) > 0 && l.member(l.host) == nil {
				t.Fatalf("lobby %q hosted by %q, not a member", l.code, l.host)
			}
		}
		m.mu.Unlock()
		m.step(ctx, now.Add(time.Hour)) // every expected member times out
	})
}

func FuzzNormalizeCode(f *testing.F) {
	f.Add("k7qxm")
	f.Fuzz(func(t *testing.T, s string) {
		code, ok := NormalizeCode(s)
		if !ok {
			return
		}
		if again, ok := NormalizeCode(code); !ok || again != code {
			t.Fatalf("%q normalizes to %q, then to %q", s, code, again)
		}
		for _, c := range code {
			if !strings.ContainsRune(Alphabet, c) {
				t.Fatalf("%q has %q", code, c)
			}
		}
	})
}
