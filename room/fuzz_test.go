package room

import (
	"strings"
	"testing"
	"time"
)

// FuzzDecode drives the packet decoder with arbitrary frames: it must
// never panic, and a frame it accepts has a type.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"type":"hello","data":{"mode":"new"}}`,
		`{"type":"input","data":3}`,
		`{"type":"queue","data":{"playlist":"duel"}}`,
		`{"type":`, `[]`, `null`, `{"type":""}`, `{"type":1}`, "\x00\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		var c JSON
		typ, body, err := c.Decode(frame)
		if err != nil {
			return
		}
		if typ == "" {
			t.Fatalf("accepted frame %q without a type", frame)
		}
		var hi hello
		_ = c.Unmarshal(body, &hi)
		var in int
		_ = c.Unmarshal(body, &in)
	})
}

// FuzzTicket drives the ticket parser: it must never panic, and must
// accept nothing but tickets it signed for its own cluster: a ticket of
// the cluster "default" is refused by a server of the cluster "cap", and
// the other way round.
func FuzzTicket(f *testing.F) {
	tk := newTickets("fuzz secret", 30*time.Second, nil)
	good, _ := tk.Issue("player-1")
	capTk := newTickets("fuzz secret", 30*time.Second, nil)
	capTk.bind("fuzz secret", "cap", nil)
	capGood, _ := capTk.Issue("player-2")
	f.Add(good)
	f.Add(capGood)
	f.Add(strings.Replace(good, "A", "B", 1))
	f.Add("")
	f.Add(".")
	f.Add("AAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		// Another encoding of the same signed body is acceptable only if
		// it names the same player.
		if id, _, err := tk.parse(s); err == nil && id != "player-1" {
			t.Fatalf("forged ticket %q accepted for %q", s, id)
		}
		if id, _, err := capTk.parse(s); err == nil && id != "player-2" {
			t.Fatalf("forged ticket %q accepted for %q on cluster cap", s, id)
		}
	})
}
