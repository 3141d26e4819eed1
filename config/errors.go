package config

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

var (
	// ErrSyntax reports a file that is not well-formed YAML, or a key
	// written twice in one mapping.
	ErrSyntax = errors.New("config: bad YAML")

	// ErrNoRoot reports a file without the root key muster.
	ErrNoRoot = errors.New("config: missing root key muster")

	// ErrUnknownKey reports a key under muster, or a MUSTER__ environment
	// variable, that names no setting.
	ErrUnknownKey = errors.New("config: unknown key")

	// ErrInvalid reports a value of the wrong type or out of range, or a
	// setting given by two environment variables.
	ErrInvalid = errors.New("config: invalid setting")
)

// Error is a bad setting. Its message is one line that names the key both
// as config.yml writes it and as the environment does, the problem, and
// where the value came from, such as
//
//	config: muster.server.http.port / MUSTER__SERVER__HTTP__PORT: want a port number 1-65535, got 0 (config.yml line 4)
//	config: muster.server.http.port / MUSTER__SERVER__HTTP__PORT: want an integer, got "abc" (from the environment)
//
// It wraps one of the sentinels ErrSyntax, ErrNoRoot, ErrUnknownKey or
// ErrInvalid. A Redis URL in it has its password hidden.
type Error struct {
	Key     string // dotted key path, e.g. "muster.server.http.port"; "" for bad YAML syntax
	Var     string // the environment variable that set the value, if any
	File    string // the file that holds the value, if known
	Line    int    // the value's line in the file, or 0
	Problem string // what is wrong, e.g. `want a positive integer, got "abc"`
	Err     error  // the sentinel
}

// Error returns the one-line message; any part that holds a control
// character is quoted, so the message never spans lines.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	switch {
	case e.Key != "":
		b.WriteString(oneLine(e.Key) + " / " + oneLine(cmp.Or(e.Var, EnvName(e.Key))) + ": ")
	case e.Var != "":
		b.WriteString(oneLine(e.Var) + ": ")
	}
	b.WriteString(oneLine(e.Problem))
	switch {
	case e.Var != "":
		b.WriteString(" (from the environment)")
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, " (%s line %d)", oneLine(e.File), e.Line)
	case e.Line > 0:
		fmt.Fprintf(&b, " (line %d)", e.Line)
	case e.File != "":
		fmt.Fprintf(&b, " (%s)", oneLine(e.File))
	}
	return b.String()
}

// Invalid returns the *Error of a bad value of key, a dotted key path
// such as "muster.server.fleet.redis": problem says what is wrong and what
// is wanted, such as `want host:port; got "redis"` (quote a value with its
// URL password hidden: RedactURL). It wraps ErrInvalid. A Check returns
// one; Load adds where the value came from.
func Invalid(key, problem string) *Error {
	return &Error{Key: key, Problem: problem, Err: ErrInvalid}
}

// EnvName returns the environment variable that sets the dotted key path
// key: "muster.server.http.port" gives MUSTER__SERVER__HTTP__PORT.
func EnvName(key string) string {
	return strings.ToUpper(strings.ReplaceAll(strings.ReplaceAll(key, "-", "_"), ".", "__"))
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

// origin is where a setting's value came from.
type origin struct {
	Var, File string
	Line      int
}

func (o origin) errorf(sentinel error, key, format string, args ...any) *Error {
	return &Error{Key: key, Var: o.Var, File: o.File, Line: o.Line, Problem: fmt.Sprintf(format, args...), Err: sentinel}
}

// oneLine quotes s if it holds anything but printable UTF-8.
func oneLine(s string) string {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}
