package e2e

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/muster-gg/muster/internal/testbin"
)

// Two pages of headless Chromium open the game through nginx, each in
// its own browser context (so each has its own player id), and queue:
// both land in one match, and each page draws the other player where
// that player moved.
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
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
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
	}
	var pages []*page
	for range 2 {
		pctx, cancelPage := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
		defer cancelPage()
		p := &page{ctx: pctx}
		if err := chromedp.Do(pctx, chromedp.Navigate(c.URL)); err != nil {
			t.Fatalf("open %s: %v", c.URL, err)
		}
		// Welcomed: the page shows its server.
		p.player = waitText(t, pctx, "#player", func(s string) bool { return s != "–" && s != "" })
		waitText(t, pctx, "#node", func(s string) bool { return s != "–" && s != "" })
		pages = append(pages, p)
	}
	// A closed tab keeps its seat, and a room whose players never leave runs
	// until a drain times out: leave the match first, as a player who
	// quits does.
	defer func() {
		for _, p := range pages {
			leave := `new Promise((done) => {
				const ws = window.musterState.socket;
				if (!ws || ws.readyState !== WebSocket.OPEN) return done(false);
				ws.send(JSON.stringify({type: 'leave', data: {}}));
				const poll = () => ws.bufferedAmount === 0 ? done(true) : setTimeout(poll, 10);
				poll();
			})`
			lctx, cancel := context.WithTimeout(p.ctx, 2*time.Second)
			left, err := chromedp.Run(lctx, chromedp.Evaluate[bool](leave, chromedp.EvalAwaitPromise))
			cancel()
			if !left || err != nil {
				t.Logf("%s could not leave its match: %v", p.player, err)
			}
		}
	}()
	if pages[0].player == pages[1].player {
		t.Fatalf("both pages play as %s", pages[0].player)
	}
	for _, p := range pages {
		if err := chromedp.Do(p.ctx, chromedp.Click(chromedp.ID("queue"))); err != nil {
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
	servers := [2]string{}
	for i, p := range pages {
		servers[i] = waitText(t, p.ctx, "#node", func(string) bool { return true })
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
	t.Logf("two pages (%s, %s) matched in %s after %v, on servers %s",
		pages[0].player, pages[1].player, rooms[0], matched.Round(time.Millisecond), strings.Join(servers[:], ", "))
}

// waitText waits until the text of the element sel satisfies ok and
// returns it.
func waitText(t *testing.T, ctx context.Context, sel string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
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
