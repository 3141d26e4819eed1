package redis

import (
	"context"
	"math"
	"strings"
	"testing"
)

// FuzzViewLog feeds the view log members Redis returned, "id\0+record" or
// "id\0-", one a line, to a whole read and then a later one: no panic, and
// the view holds each id whose last member is a record, with that record.
func FuzzViewLog(f *testing.F) {
	f.Add("a\x00+{}\nb\x00+x", "a\x00-\nb\x00+y", int64(2), int64(4))
	f.Add("\x00+\n\x00\n-\x00\nc", "c\x00+\x00+z", int64(-1), int64(-2))
	f.Fuzz(func(t *testing.T, whole, later string, seq, seq2 int64) {
		b, _ := New(nil, "fuzz") // no Redis: read is given the replies
		last := map[string]string{}
		for i, log := range []string{whole, later} {
			m := viewReply{epoch: "e", seq: []int64{seq, seq2}[i], floor: math.MinInt64, members: strings.Split(log, "\n")}
			_, nodes, _ := b.read(context.Background(), func(since int64) (viewReply, error) {
				m.wholeLogRead = since < 0 // as run does; read then never calls run
				return m, nil
			})
			if i == 0 || m.seq >= seq { // a reply behind the cache is not applied
				if m.wholeLogRead {
					clear(last)
				}
				for _, mem := range m.members {
					if id, rest, ok := strings.Cut(mem, "\x00"); ok && rest != "" && rest[0] == '+' {
						last[id] = rest[1:]
					} else if ok && rest != "" {
						delete(last, id)
					}
				}
			}
			if len(nodes) != len(last) {
				t.Fatalf("%d nodes in view, want %d", len(nodes), len(last))
			}
			for _, n := range nodes {
				if rec, ok := last[n.ID]; !ok || rec != string(n.Data) {
					t.Fatalf("node %q holds %q, want %q (%v)", n.ID, n.Data, rec, ok)
				}
			}
		}
	})
}
