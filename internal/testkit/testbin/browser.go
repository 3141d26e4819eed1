package testbin

import (
	"os/exec"
	"testing"
)

// ChromiumPath returns the path of a Chromium or Chrome binary for a test
// that drives the browser itself (chromedp), trying chromium,
// chromium-browser and google-chrome in that order. It skips the test when
// there is none (fails under CI).
func ChromiumPath(tb testing.TB) string {
	tb.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return Need(tb, "chromium")
}
