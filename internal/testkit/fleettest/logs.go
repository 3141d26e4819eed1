package fleettest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// Logs is a slog.Handler that counts records by message, for a test that
// waits on what a server logged rather than for a time. The zero value is
// ready to use.
type Logs struct {
	mu sync.Mutex
	n  map[string]int
}

// Enabled reports true: every level is counted.
func (l *Logs) Enabled(context.Context, slog.Level) bool { return true }

// WithAttrs returns l: attributes are not counted.
func (l *Logs) WithAttrs([]slog.Attr) slog.Handler { return l }

// WithGroup returns l: groups are not counted.
func (l *Logs) WithGroup(string) slog.Handler { return l }

// Handle counts r by its message.
func (l *Logs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == nil {
		l.n = map[string]int{}
	}
	l.n[r.Message]++
	return nil
}

// Count returns how many records so far have a message that starts with
// prefix.
func (l *Logs) Count(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	total := 0
	for msg, n := range l.n {
		if strings.HasPrefix(msg, prefix) {
			total += n
		}
	}
	return total
}
