package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/muster-gg/muster/examples/duel/bot"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// plays records the ticket and server of each /play request a bot makes.
type plays struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []url.Values
}

func (p *plays) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == "/play" {
		p.mu.Lock()
		p.seen = append(p.seen, r.URL.Query())
		p.mu.Unlock()
	}
	return p.next.RoundTrip(r)
}

func (p *plays) all() []url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]url.Values(nil), p.seen...)
}

// Two players queue for a duel on the two servers of a fleet; the one on
// the server that does not gather is redirected to the other and
// reconnects with the ticket and the query the redirect gave it, without
// asking for another ticket.
func TestQueueRedirectCarriesTicket(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a bound for a stuck run, not a measure
	defer cancel()
	_, addrs := duelServers(t, "duel-a", "duel-b")
	var urls []string
	for _, a := range addrs {
		urls = append(urls, "http://"+a+"/")
	}

	type player struct {
		bot   *bot.Bot
		plays *plays
	}
	var players []player
	for i, u := range urls {
		p := &plays{next: &http.Transport{}}
		t.Cleanup(p.next.(*http.Transport).CloseIdleConnections)
		b, err := bot.New(bot.Config{URL: u, Player: []string{"ann", "bob"}[i], HTTPClient: &http.Client{Transport: p},
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		testrun.GoRun(t, b.Run)
		b.Queue("duel")
		players = append(players, player{b, p})
	}
	for _, p := range players {
		seated := func(r bot.Report) bool { rm, ok := r.Room(); return ok && rm.Kind == "duel" && rm.Inputs > 0 }
		if err := p.bot.Wait(ctx, seated); err != nil {
			t.Fatalf("%s never played: %v\n%s", p.bot.Report().Player, err, p.bot.Report().Log())
		}
	}

	moved := 0
	for _, p := range players {
		r := p.bot.Report()
		if len(r.Redirects) == 0 {
			continue
		}
		moved++
		rd := r.Redirects[0]
		seen := p.plays.all()
		if rd.Reason != "queue" || len(seen) != 2 {
			t.Fatalf("%s: redirects %+v, /play requests %v\n%s", r.Player, r.Redirects, seen, r.Log())
		}
		if r.Tickets != 1 {
			t.Errorf("%s asked for %d tickets, want 1: the redirect's ticket was not used\n%s", r.Player, r.Tickets, r.Log())
		}
		first, again := seen[0], seen[1]
		if tk := again.Get("ticket"); tk == "" || tk == first.Get("ticket") {
			t.Errorf("%s reconnected with ticket %q after connecting with %q", r.Player, tk, first.Get("ticket"))
		}
		if again.Get(rd.Param) != rd.To {
			t.Errorf("%s reconnected with %v, want %s=%s", r.Player, again, rd.Param, rd.To)
		}
	}
	if moved != 1 {
		t.Errorf("%d players were redirected, want 1", moved)
	}
}
