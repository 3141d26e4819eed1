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
// accept nothing but tickets it signed.
func FuzzTicket(f *testing.F) {
	tk := newTickets("fuzz secret", 30*time.Second, nil)
	good, _ := tk.Issue("player-1")
	f.Add(good)
	f.Add(strings.Replace(good, "A", "B", 1))
	f.Add("")
	f.Add(".")
	f.Add("AAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		id, _, err := tk.parse(s)
		if err == nil && s != good {
			// Another encoding of the same signed body is acceptable
			// only if it names the same player.
			if id != "player-1" {
				t.Fatalf("forged ticket %q accepted for %q", s, id)
			}
		}
	})
}
