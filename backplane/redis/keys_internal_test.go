package redis

import (
	"os"
	"regexp"
	"testing"
)

// Every key a script touches is declared in KEYS (Redis Cluster proxies
// and Redis 8 tooling enforce it): no script builds a key name from ARGV
// or from a value it read.
func TestScriptsDeclareEveryKey(t *testing.T) {
	// The key argument of each redis.call must be KEYS[..] itself, or k,
	// the loop variable over KEYS.
	call := regexp.MustCompile(`redis\.call\('[A-Z]+', *([^,)]+)`)
	declared := regexp.MustCompile(`^(KEYS\[[0-9a-z +-]+\]|k)$`)
	for _, f := range []string{"redis.go", "view.go", "claims.go"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllSubmatch(src, -1) {
			if !declared.Match(m[1]) {
				t.Errorf("%s: a script touches an undeclared key: %s", f, m[0])
			}
		}
	}
}
