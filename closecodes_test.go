package muster_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/room"
)

// TestCloseCodesDocumented checks docs/protocol.md's table of close codes
// against what the server sends: every close code and reason the room
// host's code names together (Close(code, "reason"), or return code,
// "reason" from the handshake) has a row for its code whose reasons name
// it, so the table and the wire cannot drift apart again (#39.5: 4005 was
// documented as "rate limited" for a connection rate the server answers
// with 429, while the wire said "too many messages").
func TestCloseCodesDocumented(t *testing.T) {
	codes := map[string]int{
		"StatusGoingAway": int(room.StatusGoingAway), "StatusRedirected": int(room.StatusRedirected),
		"StatusBadHello": int(room.StatusBadHello), "StatusBadTicket": int(room.StatusBadTicket),
		"StatusBadPacket": int(room.StatusBadPacket), "StatusUnknownType": int(room.StatusUnknownType),
		"StatusReplaced": int(room.StatusReplaced), "StatusLimited": int(room.StatusLimited),
		"StatusTooSlow":       int(room.StatusTooSlow),
		"StatusMessageTooBig": int(websocket.StatusMessageTooBig), "StatusTryAgainLater": int(websocket.StatusTryAgainLater),
		"StatusProtocolError": int(websocket.StatusProtocolError),
	}
	rows := closeCodeRows(t, "docs/protocol.md")
	for name, code := range codes {
		if _, ok := rows[code]; !ok {
			t.Errorf("%s (%d) has no row in docs/protocol.md's close codes", name, code)
		}
	}
	sent := closesSent(t, "room")
	if len(sent) < 15 {
		t.Fatalf("found %d close codes with reasons in room's code; want every one", len(sent))
	}
	for _, s := range sent {
		code, ok := codes[s.code]
		if !ok {
			t.Errorf("%s: closes with %s, which this test does not know", s.at, s.code)
			continue
		}
		if s.reason != "" && !documented(rows[code], s.reason, s.prefix) {
			t.Errorf("%s: closes with %d %q; docs/protocol.md's row for %d gives %s", s.at, code, s.reason, code, rows[code])
		}
	}
}

// documented reports whether the reasons of a table cell, each in
// backquotes, name reason: the same text, or one that ends in "…" or a
// <placeholder> whose text before it starts reason. A reason built at run
// time (prefix) is named by a cell reason that starts with it.
func documented(cell, reason string, prefix bool) bool {
	parts := strings.Split(cell, "`")
	for i := 1; i < len(parts); i += 2 {
		e := parts[i]
		fixed, _, open := strings.Cut(strings.ReplaceAll(e, "…", "<"), "<")
		switch {
		case e == reason:
			return true
		case prefix && strings.HasPrefix(e, reason):
			return true
		case open && strings.HasPrefix(reason, strings.TrimSpace(fixed)):
			return true
		}
	}
	return false
}

// closeCodeRows returns the reason cell of each row of the close-code
// table in the markdown file at path, by code.
func closeCodeRows(t *testing.T, path string) map[int]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "## Close codes")
	if !ok {
		t.Fatalf("%s has no close codes section", path)
	}
	rows := make(map[int]string)
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		code, err := strconv.Atoi(strings.Trim(strings.TrimSpace(cells[1]), "`"))
		if err != nil {
			continue
		}
		rows[code] = strings.TrimSpace(cells[2])
	}
	return rows
}

type closeCall struct {
	at, code, reason string
	prefix           bool // reason is the fixed start of one built at run time
}

// closesSent returns, from the non-test Go files of dir, every close code
// followed by its reason in a call's arguments or a return's results:
// Close(StatusX, "reason"), return StatusX, "reason", with StatusX a
// constant of room or websocket and "reason" a literal, or a literal and
// more ("unknown packet type "+typ).
func closesSent(t *testing.T, dir string) []closeCall {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []closeCall
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var list []ast.Expr
			switch n := n.(type) {
			case *ast.CallExpr:
				list = n.Args
			case *ast.ReturnStmt:
				list = n.Results
			}
			for i := 0; i+1 < len(list); i++ {
				code := statusName(list[i])
				if code == "" {
					continue
				}
				reason, prefix, ok := literal(t, list[i+1])
				if ok {
					out = append(out, closeCall{at: fset.Position(list[i].Pos()).String(), code: code, reason: reason, prefix: prefix})
				}
			}
			return true
		})
	}
	return out
}

// statusName is the name of a close-code constant (StatusX or
// websocket.StatusX) that e is, or "".
func statusName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		if strings.HasPrefix(e.Name, "Status") {
			return e.Name
		}
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && x.Name == "websocket" && strings.HasPrefix(e.Sel.Name, "Status") {
			return e.Sel.Name
		}
	}
	return ""
}

// literal returns the string literal e is, or the literal that starts it
// (prefix), and whether it is either.
func literal(t *testing.T, e ast.Expr) (s string, prefix, ok bool) {
	if b, isBin := e.(*ast.BinaryExpr); isBin && b.Op == token.ADD {
		s, _, ok = literal(t, b.X)
		return s, true, ok
	}
	lit, isLit := e.(*ast.BasicLit)
	if !isLit || lit.Kind != token.STRING {
		return "", false, false
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		t.Fatal(err)
	}
	return s, false, true
}
