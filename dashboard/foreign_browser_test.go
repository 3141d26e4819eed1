package dashboard_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// TestBrowserShowsSplit opens the dashboard of a server whose fleet has a
// server with another security key: a banner names it and the key, and
// goes once the fleet is whole again (#39.7).
func TestBrowserShowsSplit(t *testing.T) {
	bin := testbin.Need(t, "chromium")
	c := fleettest.Start(t, 0, nil)
	hb := 200 * time.Millisecond
	a := c.Add(fleet.Config{NodeID: "a", Heartbeat: hb, InternalAddress: "127.0.0.1:9001", Key: []byte("the fleet's security key")})
	odd := c.Add(fleet.Config{NodeID: "odd", Heartbeat: hb, InternalAddress: "127.0.0.1:9002", Key: []byte("another security key, 16+")})
	srv := httptest.NewServer(dashboard.Handler(a.Fleet))
	t.Cleanup(srv.Close)

	ctx := browser(t, bin)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+dashboard.Path)); err != nil {
		t.Fatal(err)
	}
	banner := `(() => { const b = document.getElementById('split'); return b.hidden ? '' : b.textContent; })()`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](banner+` !== ''`, chromedp.WithPollingTimeout(waitFor))); err != nil {
		t.Fatalf("no banner for the split: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](banner))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"odd", "muster.security.key", "MUSTER__SECURITY__KEY"} {
		if !strings.Contains(text, want) {
			t.Errorf("banner %q lacks %q", text, want)
		}
	}
	screenshot(t, ctx, "dashboard-split.png")

	odd.Stop() // it leaves: the fleet is whole
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](banner+` === ''`, chromedp.WithPollingTimeout(waitFor))); err != nil {
		t.Fatalf("the banner stays once the odd server has left: %v", err)
	}
}
