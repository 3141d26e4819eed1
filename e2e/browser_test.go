package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// TestBrowser runs the browser scenario on a cluster of its own:
// go test ./e2e -run Browser.
func TestBrowser(t *testing.T) {
	c := startCluster(t)
	c.WaitView(t, len(hosts))
	testBrowser(t, c)
	c.leave(t)
}

// Two pages of headless Chromium open the game through nginx, each in
// its own browser context (so each has its own player id), on two
// different servers of the three, and queue from the page's call to
// action: the Muster client the page loads (clients/js) follows the
// redirect of at least one of them to where the playlist gathers, and
// both land in one match. Each page draws the other player where that
// player moved; one chases the orb and wins, and both pages show one
// end-of-match overlay.
func testBrowser(t *testing.T, c *cluster) {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(testbin.ChromiumPath(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1000, 800),
	}
	for _, f := range testbin.ChromiumFlags {
		name, value, ok := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if !ok {
			opts = append(opts, chromedp.Flag(name, true))
		} else {
			opts = append(opts, chromedp.Flag(name, value))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start chromium: %v", err)
	}

	type page struct {
		ctx    context.Context
		player string
		node   string
	}
	var pages []*page
	for i := range 2 {
		pctx, cancelPage := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
		defer cancelPage()
		p := &page{ctx: pctx}
		// nginx spreads the connections: the second page reloads until
		// it is welcomed by another server than the first, so that
		// queueing moves at least one of them.
		for try := 0; ; try++ {
			if err := chromedp.Do(pctx, chromedp.Navigate(c.URL)); err != nil {
				t.Fatalf("open %s: %v", c.URL, err)
			}
			// Welcomed: the page shows its player and its server.
			p.player = waitText(t, pctx, "#player", func(s string) bool { return s != "–" && s != "" })
			p.node = waitText(t, pctx, "#node", func(s string) bool { return s != "–" && s != "" })
			if i == 0 || p.node != pages[0].node {
				break
			}
			if try == 20 {
				t.Fatalf("nginx gave the second page %s twenty times, as the first", p.node)
			}
		}
		// Before queueing, the page calls to action.
		if got := eval[string](t, pctx, `document.getElementById('overlay').hidden ? 'hidden' : document.getElementById('play').textContent`); got != "Find an opponent" {
			t.Fatalf("before queueing the page of %s shows %q, want the call to action", p.player, got)
		}
		checkButtonShown(t, pctx, fmt.Sprintf("idle-%d", i))
		pages = append(pages, p)
	}
	// A closed tab keeps its seat, and a room whose players never leave runs
	// until a drain times out: leave any match left, as a player who quits
	// does.
	defer func() {
		for _, p := range pages {
			lctx, cancel := context.WithTimeout(p.ctx, 2*time.Second)
			_, err := chromedp.Run(lctx, chromedp.Evaluate[bool](`(() => {
				window.musterSession.leave();
				return window.musterSession.close().then(() => true);
			})()`, chromedp.EvalAwaitPromise))
			cancel()
			if err != nil {
				t.Logf("%s could not leave: %v", p.player, err)
			}
		}
	}()
	if pages[0].player == pages[1].player {
		t.Fatalf("both pages play as %s", pages[0].player)
	}
	for _, p := range pages {
		if err := chromedp.Do(p.ctx, chromedp.Click(chromedp.ID("play"))); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	var rooms [2]string
	for i, p := range pages {
		rooms[i] = waitText(t, p.ctx, "#room", func(s string) bool { return s != "–" && s != "" })
	}
	if rooms[0] != rooms[1] {
		t.Fatalf("the pages are in rooms %s and %s, want one match", rooms[0], rooms[1])
	}
	matched := time.Since(start)
	var servers [2]string
	redirects := 0
	for i, p := range pages {
		servers[i] = waitText(t, p.ctx, "#node", func(string) bool { return true })
		redirects += eval[int](t, p.ctx, `window.musterSession.redirects`)
	}
	if servers[0] != servers[1] {
		t.Fatalf("the pages play room %s on %s and %s", rooms[0], servers[0], servers[1])
	}
	if redirects == 0 {
		t.Fatalf("pages welcomed on %s and %s both play on %s without a redirect", pages[0].node, pages[1].node, servers[0])
	}

	// Each page steers its player; the other page must draw it there.
	for i, key := range []string{"ArrowRight", "ArrowLeft"} {
		mover, watcher := pages[i], pages[1-i]
		var before drawn
		for deadline := time.Now().Add(5 * time.Second); !before.Found; time.Sleep(50 * time.Millisecond) {
			if before = seen(t, watcher.ctx, mover.player); !before.Found && time.Now().After(deadline) {
				t.Fatalf("the page of %s shows no %s", watcher.player, mover.player)
			}
		}
		hold(t, mover.ctx, key, 700*time.Millisecond)
		var after drawn
		deadline := time.Now().Add(5 * time.Second)
		for {
			after = seen(t, watcher.ctx, mover.player)
			if math.Abs(after.X-before.X) > 80 && after.painted() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s pressed %s: the other page shows it at %+v, before %+v", mover.player, key, after, before)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("%s pressed %s; the other page drew it moved from x=%.0f to x=%.0f (pixel %d,%d,%d)",
			mover.player, key, before.X, after.X, after.R, after.G, after.B)
	}

	// The first page chases the orb until it wins; both pages end the
	// match with one overlay that names the winner.
	eval[bool](t, pages[0].ctx, `(() => {
		setInterval(() => {
			const s = window.musterState.snapshot;
			const me = s && (s.players || []).find((p) => p.ID === window.musterState.player);
			if (!me) return;
			const dx = s.orbX - me.X, dy = s.orbY - me.Y, n = Math.hypot(dx, dy) || 1;
			window.musterSession.send('input', { dx: dx / n, dy: dy / n });
		}, 50);
		return true;
	})()`)
	want := [2]string{"You win!", pages[0].player + " wins"}
	for i, p := range pages {
		// Five orbs, each at most an arena's diagonal away: about 20 s at
		// worst, on a machine that keeps up.
		got := waitTextFor(t, p.ctx, 45*time.Second, "#overlay-text", func(s string) bool {
			return strings.HasSuffix(s, "win!") || strings.HasSuffix(s, " wins") || strings.HasPrefix(s, "Match over")
		})
		if got != want[i] || eval[bool](t, p.ctx, `document.getElementById('overlay').hidden`) {
			t.Errorf("the page of %s ends the match with %q, want an overlay %q", p.player, got, want[i])
		}
		if n := eval[int](t, p.ctx, `[...document.querySelectorAll('#log div')].filter((d) => /win!$|wins$/.test(d.textContent)).length`); n != 1 {
			t.Errorf("the page of %s tells the winner %d times, want once", p.player, n)
		}
		if got := eval[string](t, p.ctx, `document.getElementById('play').textContent`); got != "Play again" {
			t.Errorf("the page of %s offers %q after the match, want Play again", p.player, got)
		}
		checkButtonShown(t, p.ctx, fmt.Sprintf("over-%d", i))
	}

	// A drain moves a waiting player, with the time it has waited, and
	// the page waits on.
	g := c.Gather(t, duelPlaylist)
	waiter := pages[1]
	eval[bool](t, waiter.ctx, `(() => {
		window.testWaits = [];
		window.musterSession.on('queue', (q) => q.type === 'queue.waiting' && window.testWaits.push(q));
		return true;
	})()`)
	if err := chromedp.Do(waiter.ctx, chromedp.Click(chromedp.ID("play"))); err != nil {
		t.Fatal(err)
	}
	queuedAt := time.Now()
	lastWait := func() (w struct {
		Node     string `json:"node"`
		WaitedMS int64  `json:"waited_ms"`
	}) {
		return eval[struct {
			Node     string `json:"node"`
			WaitedMS int64  `json:"waited_ms"`
		}](t, waiter.ctx, `window.testWaits.at(-1) || {}`)
	}
	for deadline := time.Now().Add(10 * time.Second); lastWait().Node != g.ID; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the page of %s does not wait on the gather server %s: %+v", waiter.player, g.ID, lastWait())
		}
	}
	sigterm := time.Now()
	if err := g.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		w := lastWait()
		if w.Node != g.ID && w.Node != "" {
			if least := sigterm.Sub(queuedAt) - 200*time.Millisecond; time.Duration(w.WaitedMS)*time.Millisecond < least {
				t.Errorf("the page of %s waits on %s having waited %d ms, want at least %v", waiter.player, w.Node, w.WaitedMS, least)
			}
			t.Logf("the drain of %s moved %s to %s, waited %d ms", g.ID, waiter.player, w.Node, w.WaitedMS)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the drain of %s did not move the page of %s: %+v", g.ID, waiter.player, w)
		}
	}
	if got := eval[string](t, waiter.ctx, `window.musterState.phase`); got != "waiting" {
		t.Errorf("the moved page of %s is in phase %q, want waiting", waiter.player, got)
	}
	// The drained server leaves and exits; the checks that follow look at
	// the servers still running.
	select {
	case <-g.Exited():
	case <-time.After(drainTimeout + 20*time.Second): // a bound for a stuck exit, not a measure
		t.Fatalf("%s still runs after its drain", g.ID)
	}
	t.Logf("two pages (%s on %s, %s on %s) matched in %s after %v, on %s, with %d redirect(s); %s won",
		pages[0].player, pages[0].node, pages[1].player, pages[1].node, rooms[0], matched.Round(time.Millisecond), servers[0], redirects, pages[0].player)
}

// checkButtonShown takes a screenshot of the page of ctx (kept in the
// test's artifact directory as name.png) and checks that the overlay's
// button is painted where the page lays it out: nothing hides the call to
// action.
func checkButtonShown(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	r := eval[struct{ X, Y, W, H float64 }](t, ctx, `(() => {
		const r = document.getElementById('play').getBoundingClientRect();
		return {X: r.x, Y: r.y, W: r.width, H: r.height};
	})()`)
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), name+".png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	// A point inside the button, off its label's text: its left padding.
	x, y := int(r.X+4), int(r.Y+r.H/2)
	cr, cg, cb, _ := img.At(x, y).RGBA()
	if r.W == 0 || !(cb>>8 > 180 && cr>>8 < 90) {
		t.Errorf("%s: the button at %+v shows rgb(%d,%d,%d), want its blue", name, r, cr>>8, cg>>8, cb>>8)
	}
}

// eval evaluates js on the page of ctx and returns its value.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %.60q: %v", js, err)
	}
	return v
}

// waitText waits until the text of the element sel satisfies ok and
// returns it.
func waitText(t *testing.T, ctx context.Context, sel string, ok func(string) bool) string {
	t.Helper()
	return waitTextFor(t, ctx, 20*time.Second, sel, ok)
}

// waitTextFor is waitText with a deadline of its own.
func waitTextFor(t *testing.T, ctx context.Context, timeout time.Duration, sel string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf("document.querySelector(%q).textContent", sel)))
		if err == nil && ok(strings.TrimSpace(s)) {
			return strings.TrimSpace(s)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			log, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.getElementById('log').innerText"))
			t.Fatalf("%s is %q (%v); page log:\n%s", sel, s, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// drawn is where a page's last snapshot puts a player, and the colour the
// page's canvas has there.
type drawn struct {
	X, Y    float64
	R, G, B int
	Found   bool
}

// painted reports whether the pixel is the colour the client draws other
// players in (#ff5a5f), give or take antialiasing.
func (d drawn) painted() bool {
	return d.Found && d.R > 200 && d.G > 50 && d.G < 130 && d.B > 50 && d.B < 130
}

// seen reads, on the page of ctx, where the last snapshot puts player and
// the canvas pixel at that spot: the client's state (window.musterState)
// says where to look, the canvas shows what the player sees.
func seen(t *testing.T, ctx context.Context, player string) drawn {
	t.Helper()
	js := fmt.Sprintf(`(() => {
		const s = window.musterState.snapshot;
		const p = s && (s.players || []).find(p => p.ID === %q);
		if (!p) return {Found: false};
		const px = document.getElementById('arena').getContext('2d').getImageData(Math.round(p.X), Math.round(p.Y), 1, 1).data;
		return {X: p.X, Y: p.Y, R: px[0], G: px[1], B: px[2], Found: true};
	})()`, player)
	d, err := chromedp.Run(ctx, chromedp.Evaluate[drawn](js))
	if err != nil {
		t.Fatalf("read the page: %v", err)
	}
	return d
}

// hold presses key on the page of ctx for d, as a person holds an arrow
// key.
func hold(t *testing.T, ctx context.Context, key string, d time.Duration) {
	t.Helper()
	codes := map[string]int64{"ArrowLeft": 37, "ArrowUp": 38, "ArrowRight": 39, "ArrowDown": 40}
	ev := func(typ input.DispatchKeyEventType) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{
				Type: typ, Key: key, Code: key, WindowsVirtualKeyCode: codes[key],
			})
			return err
		})
	}
	if err := chromedp.Do(ctx, ev(input.DispatchKeyEventTypeKeyDown), chromedp.Sleep(d), ev(input.DispatchKeyEventTypeKeyUp)); err != nil {
		t.Fatalf("press %s: %v", key, err)
	}
}
