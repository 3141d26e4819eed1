package compose

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The README's Docker section shows exactly the commands TestComposeScale
// runs, in its order: its first sh block holds each of them once, and
// nothing else.
func TestComposeReadme(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(moduleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const heading = "### Docker and Kubernetes\n"
	_, section, ok := strings.Cut(string(data), heading)
	if !ok {
		t.Fatalf("README.md has no %q", strings.TrimSpace(heading))
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	block, _, closed := strings.Cut(block, "```")
	if !ok || !closed {
		t.Fatal("README.md's Docker section has no sh block")
	}
	var shown []string
	for line := range strings.Lines(block) {
		// A comment starts at "  #": the commands hold # only inside.
		cmd, _, _ := strings.Cut(line, "  #")
		if cmd = strings.TrimSpace(cmd); cmd != "" {
			shown = append(shown, cmd)
		}
	}
	run := []string{cmdKey, cmdBuild, cmdUp, cmdScaleDown, cmdRestart, cmdKill, cmdDown}
	if !slices.Equal(shown, run) {
		t.Errorf("README.md's Docker commands differ from those TestComposeScale runs:\nREADME: %q\ntest:   %q", shown, run)
	}
}
