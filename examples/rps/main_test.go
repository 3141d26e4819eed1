package main

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/examples/rps/bot"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// quick are rules short enough for a test: the turn a bot that throws at
// once never runs out of, and a forfeit well after a turn.
var quick = Rules{Turn: time.Second, Forfeit: 2500 * time.Millisecond}

// serve runs one in-memory server with rules, results written to a file
// in a temporary directory, and returns its address and that file's path.
func serve(t *testing.T, rules Rules) (url, results string) {
	t.Helper()
	rules.Results = filepath.Join(t.TempDir(), "results.jsonl")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := muster.DefaultConfig()
	cfg.Security.Key = "0123456789abcdef0123456789abcdef"
	res := NewResults(rules.Results)
	s, err := muster.New(RPS{Rules: rules, Results: res}, cfg, append(options(res),
		muster.WithListener(l), muster.WithLogger(slog.New(slog.DiscardHandler)))...)
	if err != nil {
		t.Fatal(err)
	}
	testrun.GoRun(t, s.Run)
	return "http://" + l.Addr().String() + "/", rules.Results
}

// play starts a bot for player on url.
func play(t *testing.T, url, player string) *bot.Bot {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	b, err := bot.New(bot.Config{URL: url, Player: player, HTTPClient: &http.Client{Transport: tr}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	testrun.GoRun(t, b.Run)
	return b
}

// wait waits until cond holds for b's report.
func wait(t *testing.T, b *bot.Bot, what string, cond func(bot.Report) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a bound for a stuck run, not a measure
	defer cancel()
	if err := b.Wait(ctx, cond); err != nil {
		t.Fatalf("%s: %s: %v\n%+v", b.Report().Player, what, err, b.Report())
	}
}

// ended reports whether the bot's last room ended.
func ended(r bot.Report) bool { rm, ok := r.Room(); return ok && rm.Ended }

// readResults returns the results in the file at path, once there are n.
func readResults(t *testing.T, path string, n int) []Result {
	t.Helper()
	var out []Result
	testrun.WaitFor(t, "the results are written", func() bool {
		out = nil
		f, err := os.Open(path)
		if err != nil {
			return false
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var r Result
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("result line %q: %v", sc.Text(), err)
			}
			out = append(out, r)
		}
		return len(out) >= n
	})
	return out
}

// Two players by playlist and two by lobby code each play a match to its
// end, and each match's result is written once.
func TestMatchesByPlaylistAndLobby(t *testing.T) {
	url, path := serve(t, quick)
	ann, bob := play(t, url, "ann"), play(t, url, "bob")
	ann.Queue("rps")
	bob.Queue("rps")
	cat, dan := play(t, url, "cat"), play(t, url, "dan")
	cat.CreateLobby()
	wait(t, cat, "gets a lobby code", func(r bot.Report) bool { return r.Lobby.Code != "" })
	dan.JoinLobby(cat.Report().Lobby.Code)
	wait(t, cat, "sees dan in its lobby", func(r bot.Report) bool { return len(r.Lobby.Members) == 2 })
	cat.StartLobby()
	for _, b := range []*bot.Bot{ann, bob, cat, dan} {
		wait(t, b, "its match ends", ended)
	}
	results := readResults(t, path, 2)
	if len(results) != 2 {
		t.Fatalf("%d results, want 2: %+v", len(results), results)
	}
	kinds := map[string]bool{}
	for _, r := range results {
		kinds[r.Kind] = true
		if len(r.Players) != 2 || (r.Winner == "" && r.Reason != "draw") {
			t.Errorf("result %+v: want two players and a winner or a draw", r)
		}
		if rm, _ := ann.Report().Room(); r.Kind == "rps" && (r.Room != rm.ID || rm.End != r.Reason) {
			t.Errorf("result %+v, ann's room %+v", r, rm)
		}
	}
	if !kinds["rps"] || !kinds["lobby"] {
		t.Errorf("result kinds %v, want rps and lobby", kinds)
	}
}

// A player that drops mid-turn loses that round when the turn runs out,
// and comes back into its seat and plays on; one that stays away for the
// forfeit time loses the match (when the turns it misses have not lost it
// already).
func TestAwayLosesTheTurnThenForfeits(t *testing.T) {
	url, path := serve(t, quick)
	ann, bob := play(t, url, "ann"), play(t, url, "bob")
	ann.Hold(true)
	ann.Queue("rps")
	bob.Queue("rps")
	wait(t, bob, "throws in round 1", func(r bot.Report) bool { me, _ := r.State.Me("bob"); return r.State.Round == 1 && me.Thrown })
	ann.Drop()
	wait(t, bob, "sees ann away", func(r bot.Report) bool { a, _ := r.State.Me("ann"); return a.Away })
	wait(t, bob, "wins round 1 on time", func(r bot.Report) bool { return r.State.Round == 2 })
	if last := bob.Report().State.Last; last["ann"] != "" || last["bob"] == "" {
		t.Fatalf("round 1's throws %v, want none from ann", last)
	}
	ann.Hold(false)
	ann.Return()
	room, _ := bob.Report().Room()
	wait(t, ann, "is welcomed back into its seat", func(r bot.Report) bool {
		return len(r.Welcomes) == 2 && r.Welcomes[1].Room == room.ID
	})
	wait(t, ann, "throws again", func(r bot.Report) bool { me, _ := r.State.Me("ann"); return me.Thrown || r.State.Over })
	wait(t, bob, "its match ends", ended)

	// Again, and ann stays away. Bob does not throw either, so that the
	// rounds ann misses are draws: she loses by forfeit, not on turns.
	ann.Hold(true)
	bob.Hold(true)
	ann.Queue("rps")
	bob.Queue("rps")
	wait(t, bob, "plays a second match", func(r bot.Report) bool { return len(r.Rooms) == 2 && r.State.Round >= 1 })
	ann.Drop()
	wait(t, bob, "its second match ends", ended)
	if rm, _ := bob.Report().Room(); rm.End != "forfeit by ann" {
		t.Fatalf("second match ended %q, want a forfeit by ann", rm.End)
	}
	results := readResults(t, path, 2)
	if len(results) != 2 || results[1].Winner != "bob" || results[1].Reason != "forfeit by ann" {
		t.Fatalf("results %+v, want the second a forfeit by ann", results)
	}
	if r := results[0].Rounds[0]; r.Throws["ann"] != "" || r.Winner != "bob" {
		t.Fatalf("first match's round 1 %+v, want bob's on ann's missed turn", r)
	}
	if !strings.HasPrefix(results[0].Reason, "won by") && results[0].Reason != "draw" {
		t.Fatalf("first match ended %q, want it played to its end", results[0].Reason)
	}
}
