package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	rpsbot "github.com/muster-gg/muster/examples/rps/bot"
	"github.com/muster-gg/muster/internal/testkit/fleetproc"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// The rps fleet's rules: a turn long enough for a bot through nginx to
// come back within it, and a forfeit between one turn and two, so that a
// player gone for good forfeits before it could lose on turns.
const (
	rpsTurn    = 2 * time.Second
	rpsForfeit = 3500 * time.Millisecond
)

var (
	rpsOnce sync.Once
	rpsBin  string
	rpsErr  error
)

// rpsResult is the part of a saved result the test reads.
type rpsResult struct {
	Room    string   `json:"room"`
	Kind    string   `json:"kind"`
	Players []string `json:"players"`
	Winner  string   `json:"winner"`
	Reason  string   `json:"reason"`
	Rounds  []struct {
		Throws map[string]string `json:"throws"`
		Winner string            `json:"winner"`
	} `json:"rounds"`
}

// TestRPSFleet runs the turn-based example on three servers behind nginx
// with 20 bots: 12 matched by playlist, 8 in lobbies by code. In one lobby
// match a player drops mid-turn, loses that turn's round, and comes back
// into its seat; in another a player leaves for good and forfeits. Every
// match's result is written exactly once.
func TestRPSFleet(t *testing.T) {
	rpsOnce.Do(func() { rpsBin, rpsErr = fleetproc.BuildExample(t, buildDir, "./examples/rps", raceEnabled) })
	if rpsErr != nil {
		t.Fatal(rpsErr)
	}
	results := filepath.Join(t.TempDir(), "results.jsonl") // shared by the servers, appended to
	cfg := fleetConfig(rpsBin)
	cfg.Name = "e2e-rps"
	cfg.Env = append(cfg.Env, "RPS_TURN="+rpsTurn.String(), "RPS_FORFEIT="+rpsForfeit.String(), "RPS_RESULTS="+results)
	f := fleetproc.Start(t, cfg)
	player := func(name string) *rpsbot.Bot {
		b, err := rpsbot.New(rpsbot.Config{URL: f.URL, Player: name, HTTPClient: f.Client})
		if err != nil {
			t.Fatal(err)
		}
		testrun.GoRun(t, b.Run)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s: %+v", name, b.Report())
			}
		})
		return b
	}
	var all []*rpsbot.Bot
	for i := range 12 {
		b := player(fmt.Sprintf("queue-%02d", i))
		b.Queue("rps")
		all = append(all, b)
	}
	lobby := func(host, guest *rpsbot.Bot) {
		rpsAsk(t, host, "gets a lobby code", host.CreateLobby, func(r rpsbot.Report) bool { return r.Lobby.Code != "" })
		code := host.Report().Lobby.Code
		rpsAsk(t, guest, "joins the lobby", func() { guest.JoinLobby(code) }, func(r rpsbot.Report) bool { return len(r.Lobby.Members) == 2 })
		rpsWait(t, host, "sees its guest in the lobby", func(r rpsbot.Report) bool { return len(r.Lobby.Members) == 2 })
		host.StartLobby()
	}
	for i := range 2 {
		h, g := player(fmt.Sprintf("lobby-%d-host", i)), player(fmt.Sprintf("lobby-%d-guest", i))
		lobby(h, g)
		all = append(all, h, g)
	}

	// ann drops mid-turn and comes back; bob plays on.
	ann, bob := player("ann"), player("bob")
	ann.Hold(true)
	lobby(ann, bob)
	rpsWait(t, bob, "throws in round 1", func(r rpsbot.Report) bool { me, _ := r.State.Me("bob"); return r.State.Round == 1 && me.Thrown })
	ann.Drop()
	rpsWait(t, bob, "wins round 1 on ann's missed turn", func(r rpsbot.Report) bool { return r.State.Round >= 2 || r.State.Over })
	room, _ := bob.Report().Room()
	ann.Hold(false)
	ann.Return()
	rpsWait(t, ann, "is welcomed back into its seat", func(r rpsbot.Report) bool {
		return len(r.Welcomes) > 1 && r.Welcomes[len(r.Welcomes)-1].Room == room.ID
	})
	all = append(all, ann, bob)

	// cat leaves for good; neither she nor dan throws, so the rounds are
	// drawn until her forfeit.
	cat, dan := player("cat"), player("dan")
	cat.Hold(true)
	dan.Hold(true)
	lobby(cat, dan)
	rpsWait(t, dan, "plays round 1", func(r rpsbot.Report) bool { return r.State.Round == 1 })
	cat.Drop()
	rpsWait(t, dan, "wins by cat's forfeit", rpsEnded)
	if rm, _ := dan.Report().Room(); rm.End != "forfeit by cat" {
		t.Errorf("cat's match ended %q, want a forfeit by cat", rm.End)
	}
	all = append(all, dan)
	if len(all)+1 != 20 {
		t.Fatalf("%d bots", len(all)+1)
	}

	rooms := map[string]string{} // room → kind, as the bots saw them
	for _, b := range all {
		rpsWait(t, b, "its match ends", rpsEnded)
		rm, _ := b.Report().Room()
		rooms[rm.ID] = rm.Kind
	}
	if len(rooms) != 10 {
		t.Fatalf("%d rooms, want 10: %v", len(rooms), rooms)
	}
	if ann.Report().Throws == 0 {
		t.Errorf("ann never threw after coming back: %+v", ann.Report())
	}

	var saved []rpsResult
	testrun.WaitWithin(t, 30*time.Second, "the 10 results are written", func() bool {
		saved = readRPSResults(t, results)
		return len(saved) >= len(rooms)
	})
	seen := map[string]int{}
	for _, r := range saved {
		seen[r.Room]++
		if rooms[r.Room] != r.Kind {
			t.Errorf("result %+v: room %q of kind %q", r, r.Room, rooms[r.Room])
		}
		switch r.Room {
		case room.ID:
			if len(r.Rounds) == 0 || r.Rounds[0].Throws["ann"] != "" || r.Rounds[0].Winner != "bob" {
				t.Errorf("ann's match %+v: want round 1 bob's on ann's missed turn", r)
			}
		}
	}
	for id := range rooms {
		if seen[id] != 1 {
			t.Errorf("room %s: %d results, want 1", id, seen[id])
		}
	}
	if len(saved) != len(rooms) {
		t.Errorf("%d results for %d rooms", len(saved), len(rooms))
	}
}

// rpsEnded reports whether the bot's last room ended.
func rpsEnded(r rpsbot.Report) bool { rm, ok := r.Room(); return ok && rm.Ended }

// rpsWait waits until cond holds for b's report.
func rpsWait(t *testing.T, b *rpsbot.Bot, what string, cond func(rpsbot.Report) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a bound for a stuck run, not a measure
	defer cancel()
	if err := b.Wait(ctx, cond); err != nil {
		t.Fatalf("%s: %s: %v\n%+v", b.Report().Player, what, err, b.Report())
	}
}

// rpsAsk sends a request with send until b's report satisfies cond, as a
// player would: a request the server refuses for now (a lobby.error such
// as "lobby: try again later", while a busy machine's backplane calls miss
// their deadlines) is sent again, a few times at most.
func rpsAsk(t *testing.T, b *rpsbot.Bot, what string, send func(), cond func(rpsbot.Report) bool) {
	t.Helper()
	for try := 1; ; try++ {
		seen := len(b.Report().Errors)
		send()
		rpsWait(t, b, what+" (or is refused)", func(r rpsbot.Report) bool { return cond(r) || len(r.Errors) > seen })
		r := b.Report()
		if cond(r) {
			return
		}
		if try == 5 {
			t.Fatalf("%s: %s: refused %d times: %q", r.Player, what, try, r.Errors)
		}
		t.Logf("%s: %s: refused (%s); asking again", r.Player, what, r.Errors[len(r.Errors)-1])
	}
}

// readRPSResults reads the results file (none yet: no results).
func readRPSResults(t *testing.T, path string) []rpsResult {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []rpsResult
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r rpsResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("result line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}
