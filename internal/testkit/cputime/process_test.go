package cputime_test

import (
	"testing"

	"github.com/muster-gg/muster/internal/testkit/cputime"
)

// The process's CPU time grows while it computes.
func TestProcessGrows(t *testing.T) {
	before := cputime.Process()
	if before <= 0 {
		t.Fatalf("CPU time %v at the start of a test, want more than 0", before)
	}
	x := uint64(1)
	for cputime.Process() <= before {
		for range 1 << 20 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	if x == 0 {
		t.Log(x) // keeps the loop from being optimized away
	}
}
