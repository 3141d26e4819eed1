package testrun

import (
	"log/slog"
	"strings"
	"testing"
)

// Logger returns a logger that writes the records at level and above to
// the test's log, shown when the test fails (or with -v).
func Logger(tb testing.TB, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(tbWriter{tb}, &slog.HandlerOptions{Level: level}))
}

// tbWriter writes to the test's log, a line a call.
type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
