// Command duelbots plays the duel example with bots through its public
// address, as people would, and prints what happened: where they were
// matched, how long they queued, which redirects they followed, and
// whether any was ever without a working connection.
//
//	go run ./examples/duel/bot/cmd/duelbots -url http://127.0.0.1:8000/ -bots 40
//	go run ./examples/duel/bot/cmd/duelbots -url http://127.0.0.1:8000/ -bots 8 -lobby 4
//
// In queue mode each bot queues on -playlist for each of its -matches; in
// lobby mode (-lobby N) the bots play in groups of N: the first of each
// group creates a lobby, the others join it by its code, and the host
// starts each match once everyone is in. Every bot plays its matches to
// the end (with -style chase) and leaves. The run is bounded by -duration.
// The exit status is 1 when a bot did not play all its matches or could
// not connect at some attempt; dropped connections (after which the bots
// reconnect) are counted and shown.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/muster-gg/muster/examples/duel/bot"
)

func main() {
	var (
		url      = flag.String("url", "http://localhost:8080/", "the game's public address")
		n        = flag.Int("bots", 10, "number of bots")
		playlist = flag.String("playlist", "duel", "the playlist to queue on (queue mode)")
		lobby    = flag.Int("lobby", 0, "play in lobbies of this many bots instead of queueing")
		matches  = flag.Int("matches", 1, "matches each bot plays")
		style    = flag.String("style", "chase", "steering: chase, random or idle (idle and random rarely end a match)")
		duration = flag.Duration("duration", 2*time.Minute, "bound on the whole run")
		prefix   = flag.String("prefix", "bot-"+strings.ToLower(rand.Text()[:4]), "player id prefix")
		verbose  = flag.Bool("v", false, "print every bot's log")
	)
	flag.Parse()
	if *n < 1 || *matches < 1 || *lobby < 0 || *lobby == 1 {
		fmt.Fprintln(os.Stderr, "duelbots: -bots and -matches must be positive, -lobby 0 or at least 2")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	bots := make([]*bot.Bot, *n)
	for i := range bots {
		b, err := bot.New(bot.Config{
			URL: *url, Player: fmt.Sprintf("%s-%03d", *prefix, i), Style: bot.Style(*style),
			Matches: *matches, HTTPClient: client,
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "duelbots:", err)
			os.Exit(2)
		}
		bots[i] = b
	}

	start := time.Now()
	runErrs := make([]error, len(bots))
	var wg sync.WaitGroup
	for i, b := range bots {
		wg.Go(func() { runErrs[i] = b.Run(ctx) })
	}
	var scripts sync.WaitGroup
	if *lobby > 0 {
		for g := 0; g < len(bots); g += *lobby {
			group := bots[g:min(g+*lobby, len(bots))]
			scripts.Go(func() { playLobby(ctx, group, *matches) })
		}
	} else {
		for _, b := range bots {
			scripts.Go(func() { playQueue(ctx, b, *playlist, *matches) })
		}
	}
	scripts.Wait()
	wg.Wait()
	ok := summarize(os.Stdout, bots, runErrs, *matches, time.Since(start), *verbose)
	if !ok {
		os.Exit(1)
	}
}

// playQueue queues b for each of its matches.
func playQueue(ctx context.Context, b *bot.Bot, playlist string, matches int) {
	for m := range matches {
		b.Queue(playlist)
		if b.Wait(ctx, func(r bot.Report) bool { return r.Ended() > m }) != nil {
			return
		}
	}
}

// playLobby plays the matches of one lobby: the first bot hosts.
func playLobby(ctx context.Context, group []*bot.Bot, matches int) {
	host := group[0]
	host.CreateLobby()
	if host.Wait(ctx, func(r bot.Report) bool { return r.Lobby.Code != "" }) != nil {
		return
	}
	code := host.Report().Lobby.Code
	for _, b := range group[1:] {
		b.JoinLobby(code)
	}
	for m := range matches {
		full := func(r bot.Report) bool { return len(r.Lobby.Members) == len(group) && !r.Lobby.Playing }
		if host.Wait(ctx, full) != nil {
			return
		}
		host.StartLobby()
		for _, b := range group {
			if b.Wait(ctx, func(r bot.Report) bool { return r.Ended() > m }) != nil {
				return
			}
		}
	}
}

// summarize prints what the bots did and reports whether all went well.
func summarize(w *os.File, bots []*bot.Bot, runErrs []error, matches int, took time.Duration, verbose bool) bool {
	var (
		played, broken   int
		dropped          int
		queued           []time.Duration
		rejoins, back    []time.Duration
		redirects, drops = map[string]int{}, map[string]int{}
		first, roomNodes = map[string]int{}, map[string]int{}
		ends             = map[string]int{}
		problems         []string
	)
	for i, b := range bots {
		r := b.Report()
		if verbose {
			fmt.Fprint(w, r.Log())
		}
		played += r.Ended()
		if len(r.Nodes) > 0 {
			first[r.Nodes[0]]++
		}
		for _, rm := range r.Rooms {
			roomNodes[rm.Node]++
			if rm.Queued > 0 {
				queued = append(queued, rm.Queued)
			}
			reason := rm.Reason
			if strings.HasPrefix(reason, "won by ") {
				reason = "won"
			}
			if reason != "" {
				ends[reason]++
			}
		}
		for _, rd := range r.Redirects {
			redirects[rd.Reason]++
		}
		for _, rj := range r.Rejoins {
			rejoins = append(rejoins, rj.Took)
		}
		var why []string
		if r.Ended() < matches {
			why = append(why, fmt.Sprintf("played %d of %d matches", r.Ended(), matches))
		}
		if len(r.Failures) > 0 {
			why = append(why, fmt.Sprintf("%d failed connection attempts (first: %s)", len(r.Failures), r.Failures[0].Err))
		}
		for _, d := range r.Drops {
			drops[fmt.Sprintf("%d %s", d.Code, d.Reason)]++
		}
		if len(r.Drops) > 0 {
			dropped++
		}
		for _, rc := range r.Reconnects {
			if rc.Cause == "drop" {
				back = append(back, rc.Took)
			}
		}
		if err := runErrs[i]; err != nil && !errors.Is(err, context.Canceled) {
			why = append(why, "stopped: "+err.Error())
		}
		if len(why) > 0 {
			broken++
			problems = append(problems, r.Player+": "+strings.Join(why, "; "))
		}
	}
	fmt.Fprintf(w, "%d bots, %d of %d matches played, in %v\n", len(bots), played, len(bots)*matches, took.Round(time.Millisecond))
	fmt.Fprintf(w, "first connection by server: %s\n", counts(first))
	fmt.Fprintf(w, "seats by server:            %s\n", counts(roomNodes))
	fmt.Fprintf(w, "redirects by reason:        %s\n", counts(redirects))
	fmt.Fprintf(w, "matches ended:              %s\n", counts(ends))
	fmt.Fprintf(w, "queue to seat:              %s\n", bot.Quantiles(queued))
	// A drop is a connection that ended without a redirect, such as the
	// one relayed through a server that finished its drain: the bot was
	// without a connection until it reconnected.
	fmt.Fprintf(w, "bots dropped at least once: %d (closes: %s)\n", dropped, counts(drops))
	if len(back) > 0 {
		fmt.Fprintf(w, "drop to next connection:    %s\n", bot.Quantiles(back))
	}
	if len(rejoins) > 0 {
		fmt.Fprintf(w, "drop to back in the room:   %s\n", bot.Quantiles(rejoins))
	}
	fmt.Fprintf(w, "bots with a problem:        %d (a match not played, a failed connection attempt)\n", broken)
	for _, p := range problems {
		fmt.Fprintln(w, "  "+p)
	}
	return broken == 0
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
