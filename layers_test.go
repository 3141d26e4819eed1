package muster_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/muster-gg/muster"

// layers ranks the module's production packages, by path prefix (the
// longest that matches wins): a package may import only packages of a
// lower rank, or the package whose folder it sits in (a command below its
// library). config is plain data and the backplane the contract everything
// stands on; fleet builds on the backplane; the room host on the fleet;
// the modules and federation on the room host; the root package assembles
// a server from all of them; commands and examples sit on top.
var layers = map[string]int{
	"config":                  0,
	"backplane":               0,
	"relay":                   0, // declares the one interface it needs (a directory of nodes)
	"internal/uid":            0,
	"internal/addrkey":        0,
	"internal/baseurl":        0,
	"internal/defaults":       0,
	"internal/epoll":          -10, // below relay, which uses it
	"internal/wsframe":        -10, // below relay and room, which use it; imports nothing of ours
	"clients/js":              0,
	"backplane/memory":        10,
	"backplane/redis":         10,
	"backplane/backplanetest": 10,
	"fleet":                   20,
	"room":                    30,
	"internal/modkit":         35,
	"matchmaking":             40,
	"lobby":                   40,
	"federation":              40,
	"metrics":                 50,
	"dashboard":               50,
	"":                        60, // the root package, muster
	"cmd":                     70,
	"examples":                70,
}

// testKit holds the packages that only tests and test programs may
// import: harnesses, fake players, the outside programs' launchers, and
// the programs that measure.
var testKit = []string{"internal/testkit", "bench", "e2e", "soak"}

// TestLayers fails when a package imports across the layers above: a low
// package importing a high one, a package of one layer importing another
// of the same, production code importing the test kit, or a package the
// table does not place.
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	n := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		pkg := rel(fields[0])
		n++
		if inTestKit(pkg) {
			continue
		}
		rank, ok := rankOf(pkg)
		if !ok {
			t.Errorf("%s is in no layer: add it to layers in layers_test.go", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := rel(imp)
			switch r, ok := rankOf(dep); {
			case inTestKit(dep):
				t.Errorf("%s imports the test kit %s: only tests and test programs may", pkg, dep)
			case !ok:
				t.Errorf("%s imports %s, which is in no layer", pkg, dep)
			case r >= rank && !strings.HasPrefix(pkg, dep+"/"):
				t.Errorf("%s (layer %d) imports %s (layer %d): imports point down only", pkg, rank, dep, r)
			}
		}
	}
	if n < 20 {
		t.Fatalf("go list named %d packages; want the whole module", n)
	}
}

// TestConfigIsData checks that package config imports no package of the
// module: it is YAML and the environment into plain data.
func TestConfigIsData(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"/config").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, module) && dep != module+"/config" {
			t.Errorf("config depends on %s", dep)
		}
	}
}

// rel is pkg's path inside the module; "" for the root package.
func rel(pkg string) string {
	return strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
}

func inTestKit(pkg string) bool {
	for _, k := range testKit {
		if pkg == k || strings.HasPrefix(pkg, k+"/") {
			return true
		}
	}
	return false
}

// rankOf returns the rank of the longest prefix of pkg in layers; only
// the root package itself has the root's rank.
func rankOf(pkg string) (int, bool) {
	for p := pkg; ; {
		if r, ok := layers[p]; ok && (p != "" || pkg == "") {
			return r, true
		}
		i := strings.LastIndex(p, "/")
		if i < 0 {
			return 0, false
		}
		p = p[:i]
	}
}
