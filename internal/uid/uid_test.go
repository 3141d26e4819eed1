package uid

import (
	"regexp"
	"testing"
)

func TestTag(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z2-7]{10}$`)
	seen := map[string]bool{}
	for range 1000 {
		tag := Tag()
		if !valid.MatchString(tag) {
			t.Fatalf("Tag() = %q, want 10 characters of lowercase base32", tag)
		}
		if seen[tag] {
			t.Fatalf("Tag() gave %q twice in 1000 calls", tag)
		}
		seen[tag] = true
	}
}
