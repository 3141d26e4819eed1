package soak

import (
	"testing"
	"time"

	"github.com/muster-gg/muster/examples/duel/bot"
)

// TestLost checks the judgment behind invariant 5 on made-up reports, as
// the soak's scenarios see them: a room is lost when a bot says so and no
// one saw it end properly.
func TestLost(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	room := func(node, id string, started, ended int, reason string) bot.Room {
		rm := bot.Room{ID: id, Kind: "duel", Node: node, Started: at(started), Reason: reason}
		if ended > 0 {
			rm.Ended = at(ended)
		}
		return rm
	}
	report := func(player string, rooms ...bot.Room) bot.Report {
		return bot.Report{Player: player, Rooms: rooms, Events: []bot.Event{{At: t0, Kind: "welcome", Node: "duel-1"}}}
	}
	st := status{reports: []bot.Report{
		// Away while its room ended: a won room is not lost (the drain's
		// false alarm), nor one the bot itself saw end after it got back.
		report("away", room("duel-1", "r4", 1, 70, "lost"), room("duel-1", "r41", 73, 0, "")),
		report("stayed", room("duel-1", "r4", 1, 69, "won by stayed"), room("duel-1", "r41", 73, 0, "")),
		// A room both players lost, that nobody saw end: lost, twice.
		report("a", room("duel-3", "r7", 1, 30, "lost")),
		report("b", room("duel-3", "r7", 1, 31, "lost")),
		// The same room id ended well on another server says nothing.
		report("c", room("duel-3", "r9", 1, 40, "lost")),
		report("d", room("duel-1", "r9", 1, 40, "won by d")),
		// Lost before the scenario began.
		report("e", room("duel-3", "r2", 1, 5, "lost")),
	}}
	got := map[string]string{}
	for _, l := range st.lost(at(10)) {
		got[l.player] = l.room.Node + "/" + l.room.ID
	}
	want := map[string]string{"a": "duel-3/r7", "b": "duel-3/r7", "c": "duel-3/r9"}
	if len(got) != len(want) {
		t.Fatalf("lost since +10s: %v, want %v", got, want)
	}
	for p, rm := range want {
		if got[p] != rm {
			t.Errorf("lost since +10s: %v, want %v", got, want)
		}
	}
	if n := st.lostSince(at(10)); n != len(want) {
		t.Errorf("lostSince = %d, want %d (the rooms lost names)", n, len(want))
	}
	if n := st.lostSince(at(0)); n != len(want)+1 {
		t.Errorf("lostSince from the start = %d, want %d", n, len(want)+1)
	}
}
