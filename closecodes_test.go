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

	"github.com/muster-gg/muster/room"
)

// TestCloseCodesDocumented checks docs/protocol.md's table of close codes
// against what the server sends: every Close(code, "reason") in the room
// host's code has a row for its code whose reasons name it, so the table
// and the wire cannot drift apart again (#39.5: 4005 was documented as
// "rate limited" for a connection rate the server answers with 429, while
// the wire said "too many messages").
func TestCloseCodesDocumented(t *testing.T) {
	codes := map[string]int{
		"StatusGoingAway": int(room.StatusGoingAway), "StatusRedirected": int(room.StatusRedirected),
		"StatusBadHello": int(room.StatusBadHello), "StatusBadTicket": int(room.StatusBadTicket),
		"StatusBadPacket": int(room.StatusBadPacket), "StatusUnknownType": int(room.StatusUnknownType),
		"StatusReplaced": int(room.StatusReplaced), "StatusLimited": int(room.StatusLimited),
		"StatusTooSlow": int(room.StatusTooSlow),
	}
	rows := closeCodeRows(t, "docs/protocol.md")
	for name, code := range codes {
		if _, ok := rows[code]; !ok {
			t.Errorf("room.%s (%d) has no row in docs/protocol.md's close codes", name, code)
		}
	}
	sent := closesSent(t, "room")
	if len(sent) < 5 {
		t.Fatalf("found %d closes in room's code; want every Close(code, reason)", len(sent))
	}
	for _, s := range sent {
		code, ok := codes[s.code]
		if !ok {
			t.Errorf("%s: Close with %s, which this test does not know", s.at, s.code)
			continue
		}
		if s.reason == "" {
			continue
		}
		if !strings.Contains(rows[code], "`"+s.reason) {
			t.Errorf("%s: closes with %d %q; docs/protocol.md's row for %d gives %s", s.at, code, s.reason, code, rows[code])
		}
	}
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
}

// closesSent returns the calls Close(Status…, "reason") in the non-test
// Go files of dir.
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
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 2 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Close" {
				return true
			}
			id, ok := call.Args[0].(*ast.Ident)
			lit, isLit := call.Args[1].(*ast.BasicLit)
			if !ok || !strings.HasPrefix(id.Name, "Status") || !isLit || lit.Kind != token.STRING {
				return true
			}
			reason, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, closeCall{at: fset.Position(call.Pos()).String(), code: id.Name, reason: reason})
			return true
		})
	}
	return out
}
