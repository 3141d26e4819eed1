package js_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The module's root, from this package's directory.
const root = "../.."

// serverDirs are the packages whose code sends packets to clients: the
// one-call server, the room host, its modules and the duel example (its
// bot is a client, not here).
var serverDirs = []string{".", "room", "lobby", "matchmaking", "examples/duel", "internal/modkit"}

// TestProtocolDocumented checks that docs/protocol.md documents every packet
// type the server sends and every message type it handles, as `type`, and
// every close code the room host uses, as `code`.
func TestProtocolDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	types, codes := wireNames(t)
	if len(types) < 10 || len(codes) < 6 {
		t.Fatalf("found only packet types %v and close codes %v in the code: the scan is broken", types, codes)
	}
	for _, typ := range types {
		if !strings.Contains(string(doc), "`"+typ+"`") {
			t.Errorf("docs/protocol.md does not document the packet type `%s`", typ)
		}
	}
	for _, code := range codes {
		if !regexp.MustCompile("\\| `" + strconv.Itoa(code) + "` \\|").Match(doc) {
			t.Errorf("docs/protocol.md has no row for the close code `%d` in its table", code)
		}
	}
	t.Logf("documented: packet types %v, close codes %v", types, codes)
}

// wireNames finds, in the non-test Go files of serverDirs, the packet and
// message types (string values of Type fields and of "type" keys, and
// string constants named Type…, Msg… or msg…) and the close codes
// (websocket.StatusCode(N) constants, and the standard ones the host
// uses by name).
func wireNames(t *testing.T) (types []string, codes []int) {
	t.Helper()
	std := map[string]int{"StatusNormalClosure": 1000, "StatusGoingAway": 1001, "StatusMessageTooBig": 1009, "StatusTryAgainLater": 1013}
	addType := func(lit ast.Expr) {
		if bl, ok := lit.(*ast.BasicLit); ok && bl.Kind == token.STRING {
			if s, err := strconv.Unquote(bl.Value); err == nil && s != "" && !slices.Contains(types, s) {
				types = append(types, s)
			}
		}
	}
	addCode := func(n int) {
		if !slices.Contains(codes, n) {
			codes = append(codes, n)
		}
	}
	fset := token.NewFileSet()
	for _, dir := range serverDirs {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err) // a package that moved must be named here again
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(root, dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.KeyValueExpr:
					switch k := n.Key.(type) {
					case *ast.Ident:
						if k.Name == "Type" {
							addType(n.Value)
						}
					case *ast.BasicLit:
						if k.Value == `"type"` {
							addType(n.Value)
						}
					}
				case *ast.ValueSpec:
					for i, id := range n.Names {
						if i >= len(n.Values) {
							break
						}
						v := n.Values[i]
						if strings.HasPrefix(id.Name, "Type") || strings.HasPrefix(id.Name, "Msg") || strings.HasPrefix(id.Name, "msg") {
							addType(v)
						}
						if c, ok := v.(*ast.CallExpr); ok && strings.HasPrefix(id.Name, "Status") && len(c.Args) == 1 {
							if bl, ok := c.Args[0].(*ast.BasicLit); ok {
								if code, err := strconv.Atoi(bl.Value); err == nil {
									addCode(code)
								}
							}
						}
					}
				case *ast.SelectorExpr:
					if x, ok := n.X.(*ast.Ident); ok && x.Name == "websocket" {
						if code, ok := std[n.Sel.Name]; ok {
							addCode(code)
						}
					}
				}
				return true
			})
		}
	}
	slices.Sort(types)
	slices.Sort(codes)
	return types, codes
}

// The scan sees the packets it must: a check of the check.
func TestProtocolScan(t *testing.T) {
	types, codes := wireNames(t)
	for _, want := range []string{"welcome", "room", "room_end", "redirect", "server_draining", "queue.waiting", "lobby.state", "hello", "input"} {
		if !slices.Contains(types, want) {
			t.Errorf("the scan misses the packet type %q; it found %v", want, types)
		}
	}
	for _, want := range []int{1000, 4000, 4001, 4002, 4003, 4004, 4005} {
		if !slices.Contains(codes, want) {
			t.Errorf("the scan misses the close code %d; it found %v", want, codes)
		}
	}
}
