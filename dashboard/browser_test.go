package dashboard_test

import (
	"context"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

var updateDocs = flag.Bool("update-docs", false, "write the README's screenshot, ../docs/dashboard.png")

// waitFor bounds every wait in the browser test; it is a failure deadline,
// never a measurement.
const waitFor = 20 * time.Second

// row is a server as the page shows it.
type row struct {
	ID, State, Region, Load, Queues, Rooms, Players string
	Self                                            bool
}

// readRows reads the table the page rendered.
const readRows = `[...document.querySelectorAll('#nodes tr[data-node]')].map(tr => ({
	ID: tr.dataset.node,
	State: tr.querySelector('.pill').textContent,
	Region: tr.querySelector('.region').textContent,
	Load: tr.querySelector('.bar .text').textContent,
	Queues: tr.querySelector('.queues').textContent,
	Rooms: tr.querySelector('.rooms').textContent,
	Players: tr.querySelector('.players').textContent,
	Self: tr.querySelector('.self') !== null,
}))`

// TestBrowser opens the dashboard of a 3-server fleet in Chromium: it shows
// the three, one of them draining, then two once it has left; then the
// dashboard of a server alone, and what the page does when its server goes.
func TestBrowser(t *testing.T) {
	bin := testbin.Need(t, "chromium")

	// A fleet of three on real time, with short heartbeats.
	c := fleettest.Start(t, 3, func(i int, cfg *fleet.Config) {
		cfg.Heartbeat = 200 * time.Millisecond
		cfg.Cluster = "demo"
		cfg.Region = []string{"eu-west", "eu-west", "us-east"}[i]
	})
	s0, s1, s2 := c.Servers[0], c.Servers[1], c.Servers[2]
	s0.SetLoad(124)
	s0.SetStat("queue:duel", 4)
	s0.SetStat("queue:squad", 1)
	s0.SetStat("rooms", 31)
	s0.SetStat("players", 62)
	s1.SetLoad(200) // full
	s1.SetStat("queue:duel", 0)
	s1.SetStat("rooms", 50)
	s1.SetStat("players", 100)
	s2.SetLoad(36) // publishes no rooms or players: "–"
	release := make(chan struct{})
	s2.AddDrainer(fleet.DrainerFunc(func(ctx context.Context) error {
		select { // the drain holds until the test lets it end
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}))
	srv := httptest.NewServer(dashboard.Handler(s0))
	t.Cleanup(srv.Close)

	ctx := browser(t, bin)
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1000, 360),
		chromedp.Navigate(srv.URL+dashboard.Path),
	); err != nil {
		t.Fatal(err)
	}

	rows := waitRows(t, ctx, "three servers", `rows.length === 3 && rows[0].querySelector('.bar .text').textContent === '124 / 200'`)
	want := []row{
		{ID: "s0", State: "ready", Region: "eu-west", Load: "124 / 200", Queues: "duel 4squad 1", Rooms: "31", Players: "62", Self: true},
		{ID: "s1", State: "full", Region: "eu-west", Load: "200 / 200", Queues: "duel 0", Rooms: "50", Players: "100"},
		{ID: "s2", State: "ready", Region: "us-east", Load: "36 / 200", Queues: "–", Rooms: "–", Players: "–"},
	}
	checkRows(t, rows, want)
	summary, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`['servers','load','rooms','players','queued'].map(k => document.getElementById('sum-'+k).textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if got, wantSum := strings.Join(summary, " | "), "3 | 360 / 600 60% | 81 | 162 | 5"; got != wantSum {
		t.Errorf("summary %q, want %q", got, wantSum)
	}

	// s2 drains: it shows as draining while its drainer holds...
	var drains sync.WaitGroup
	t.Cleanup(drains.Wait)
	drains.Go(func() { s2.Drain(context.Background()) })
	rows = waitRows(t, ctx, "s2 draining", `rows.length === 3 && rows[2].dataset.state === 'draining'`)
	want[2].State = "draining"
	checkRows(t, rows, want)
	shot := screenshot(t, ctx, "dashboard-3-servers.png")
	if *updateDocs {
		if err := os.WriteFile(filepath.Join("..", "docs", "dashboard.png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// ...and is gone once it has left.
	close(release)
	rows = waitRows(t, ctx, "two servers", `rows.length === 2`)
	checkRows(t, rows, want[:2])
	screenshot(t, ctx, "dashboard-2-servers.png")

	// One server alone, on the memory backplane, looks right too.
	alone, err := fleet.New(fleet.Config{NodeID: "solo", MaxLoad: 100}, memory.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	alone.MarkReady()
	alone.SetLoad(95)
	solo := httptest.NewServer(dashboard.Handler(alone))
	defer solo.Close()
	if err := chromedp.Do(ctx, chromedp.Navigate(solo.URL+dashboard.Path)); err != nil {
		t.Fatal(err)
	}
	rows = waitRows(t, ctx, "one server", `rows.length === 1`)
	checkRows(t, rows, []row{{ID: "solo", State: "ready", Region: "–", Load: "95 / 100", Queues: "–", Rooms: "–", Players: "–", Self: true}})
	screenshot(t, ctx, "dashboard-1-server.png")

	// When the server goes away the page says so and keeps polling.
	solo.Close()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](
		`document.getElementById('status').dataset.live === 'false' && document.body.classList.contains('stale')`,
		chromedp.WithPollingTimeout(waitFor))); err != nil {
		t.Fatalf("the page did not notice its server went away: %v", err)
	}
}

// browser starts headless Chromium with a new empty profile and returns a
// tab's context; both end with the test.
func browser(t *testing.T, bin string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1000, 360),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("force-color-profile", "srgb"),
	}
	for _, f := range testbin.ChromiumFlags {
		opts = append(opts, chromedp.Flag(strings.TrimPrefix(f, "--"), true))
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc() // waits for the browser to exit
	})
	return ctx
}

// waitRows polls the page until cond holds of its rows (a JavaScript
// expression over rows, the table's server rows), then returns them.
func waitRows(t *testing.T, ctx context.Context, what, cond string) []row {
	t.Helper()
	expr := `(() => { const rows = [...document.querySelectorAll('#nodes tr[data-node]')]; return ` + cond + `; })()`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(waitFor))); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[[]row](readRows))
		t.Fatalf("%s: %v; the page shows %+v", what, err, got)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]row](readRows))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func checkRows(t *testing.T, got, want []row) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("the page shows %d servers, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// screenshot saves the page as name in the test's artifact directory and
// returns the PNG.
func screenshot(t *testing.T, ctx context.Context, name string) []byte {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	return png
}
